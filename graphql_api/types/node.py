"""The Node interface: every object has an opaque global id."""

from __future__ import annotations

import strawberry


@strawberry.interface(description="An object with an opaque, globally unique id.")
class Node:
    id: strawberry.ID

"""The Node interface: every object has an opaque global id."""

from __future__ import annotations

import strawberry


@strawberry.interface(description="An object with an opaque, globally unique id.")
class Node:
    id: strawberry.ID = strawberry.field(
        description="Opaque global id (base64url text). Pass it to `node(id)` or the type's own root field, "
        "and store it as is: do not parse it. Ids of another organisation name nothing."
    )

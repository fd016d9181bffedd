"""The app's own schema extensions, for the tests that hold every one of them to a rule."""

from __future__ import annotations

from strawberry.extensions import SchemaExtension

import graphql_api.app  # noqa: F401  # imports every extension the app installs


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def app_extensions() -> list[type[SchemaExtension]]:
    """Every ``SchemaExtension`` subclass defined under ``graphql_api``."""
    return [cls for cls in _subclasses(SchemaExtension) if cls.__module__.startswith("graphql_api")]

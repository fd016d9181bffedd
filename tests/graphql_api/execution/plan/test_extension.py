"""The seam: plans replace only the field walk, so no extension may hook into fields."""

from __future__ import annotations

from strawberry.extensions import SchemaExtension

import graphql_api.app  # noqa: F401  # imports every extension the app installs
from graphql_api.settings.api import ApiSettings


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_our_extensions__no_resolve_hook__plans_bypass_nothing() -> None:
    ours = [cls for cls in _subclasses(SchemaExtension) if cls.__module__.startswith("graphql_api")]
    assert ours, "the app's extensions were not found"
    assert [cls.__name__ for cls in ours if cls.resolve is not SchemaExtension.resolve] == []


def test_settings__compiled_plans__on_by_default_and_can_be_turned_off() -> None:
    secret = {"JWT_SECRET": "x" * 32}
    assert ApiSettings.from_env(secret).compiled_plans is True
    assert ApiSettings.from_env({**secret, "COMPILED_PLANS": "false"}).compiled_plans is False

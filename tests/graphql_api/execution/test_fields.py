"""Field declarations both executors read (graphql_api/execution/fields.py)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
import strawberry
from graphql import graphql

from graphql_api.execution.fields import USE_RESOLVER, Deferred, load_of, loaded, read, read_of, settled
from graphql_api.execution.library_internals import graphql_schema


def _echo(context: Any, arguments: dict[str, Any]) -> str:
    return f"{context['prefix']}{arguments['id']}"


class Denied(strawberry.BasePermission):
    message = "no"

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        return False


@strawberry.type
class Query:
    echo = loaded(
        _echo,
        returns=str,
        description="The id back.",
        id=Annotated[strawberry.ID, strawberry.argument(description="Any id.")],
    )

    @strawberry.field(metadata=read(lambda source: USE_RESOLVER))
    def relation(self) -> str:
        return "resolved"

    @strawberry.field(permission_classes=[Denied], metadata=read(lambda source: "read around the permission"))
    def guarded(self) -> str:
        return "guarded"


SCHEMA = strawberry.Schema(query=Query)
FIELDS = graphql_schema(SCHEMA).query_type.fields  # type: ignore[union-attr]


def test_loaded__graphql_core_calls_the_resolver_made_from_the_load() -> None:
    result = asyncio.run(graphql(graphql_schema(SCHEMA), '{ echo(id: "7") }', context_value={"prefix": "#"}))
    assert result.errors is None
    assert result.data == {"echo": "#7"}


def test_loaded__schema__arguments_and_descriptions_as_a_written_resolver() -> None:
    sdl = SCHEMA.as_str()
    assert '"""The id back."""\n  echo(\n    """Any id."""\n    id: ID!\n  ): String!' in sdl


def test_loaded__the_load_is_what_plans_read() -> None:
    assert load_of(FIELDS["echo"]) is _echo
    assert load_of(FIELDS["relation"]) is None


def test_read__declared__and_not_around_a_permission() -> None:
    declared = read_of(FIELDS["relation"])
    assert declared is not None and declared(None) is USE_RESOLVER
    assert read_of(FIELDS["guarded"]) is None


def test_loaded__argument_named_differently_in_graphql__refused() -> None:
    with pytest.raises(ValueError, match="first_name"):
        loaded(_echo, returns=str, description="x", first_name=str)


def test_settled__a_deferred__waits_for_its_batch() -> None:
    async def run() -> list[Any]:
        ready = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(ready.set_result, None)

        async def later() -> str:
            return "awaited"

        return [await settled(Deferred(ready, lambda: "deferred")), await settled(later()), await settled("plain")]

    assert asyncio.run(run()) == ["deferred", "awaited", "plain"]

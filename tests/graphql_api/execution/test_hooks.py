"""The extension runner that wraps each class's hooks once does what Strawberry's own runner does.

Written against strawberry-graphql 0.341.2 (the lock pins it): an upgrade that changes how
Strawberry's runner wraps, orders or enters hooks fails here, by comparison with Strawberry's
runner itself, rather than as a hook that silently stops running.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.extensions.context import (
    ExecutingContextManager,
    ExtensionContextManagerBase,
    OperationContextManager,
    ParsingContextManager,
    ValidationContextManager,
)

from graphql_api.execution import hooks
from graphql_api.execution.hooks import HookRunner
from graphql_api.schema.executable import ApiSchema, build_schema
from tests.graphql_api.execution.app_extensions import app_extensions

STAGES: list[tuple[type[ExtensionContextManagerBase], type[ExtensionContextManagerBase]]] = [
    (OperationContextManager, hooks._Operation),
    (ParsingContextManager, hooks._Parsing),
    (ValidationContextManager, hooks._Validation),
    (ExecutingContextManager, hooks._Executing),
]


def test_every_extension_of_the_app__each_stage__the_hook_strawberry_would_wrap() -> None:
    ours = app_extensions()
    assert len(ours) >= 15, "the app's extensions were not found"
    for cls in ours:
        extension = object.__new__(cls)  # only its class is read
        for theirs, wrapped_once in STAGES:
            expected = theirs([extension]).hooks
            got = wrapped_once([extension]).hooks
            assert [(h.extension, h.is_async) for h in got] == [(h.extension, h.is_async) for h in expected], (
                cls,
                theirs,
            )
            # Each of ours is a generator, wrapped once (none falls back to per-request wrapping).
            assert hooks._wrapped[(cls, theirs.HOOK_NAME)] is not hooks._PER_REQUEST, cls


def test_app_schema__makes_the_wrapped_once_runner() -> None:
    schema = build_schema()
    assert isinstance(schema.create_extensions_runner(None, []), HookRunner)  # type: ignore[arg-type]


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []


RECORDED: Recorder = Recorder()


class SyncHooks(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        RECORDED.events.append("sync operation: before")
        yield
        RECORDED.events.append("sync operation: after")

    def on_execute(self) -> Iterator[None]:
        RECORDED.events.append("sync execute: before")
        try:
            yield
        except Exception as error:  # what a later hook raised, thrown back in
            RECORDED.events.append(f"sync execute: saw {error}")
            raise
        RECORDED.events.append("sync execute: after")


class AsyncHooks(SchemaExtension):
    async def on_execute(self) -> AsyncIterator[None]:
        await asyncio.sleep(0)
        RECORDED.events.append("async execute: before")
        yield
        RECORDED.events.append("async execute: after")

    def get_results(self) -> dict[str, Any]:
        return {"recorded": len(RECORDED.events)}


class PlainHook(SchemaExtension):
    def on_parse(self) -> None:  # type: ignore[override]  # not a generator: Strawberry wraps it per request
        RECORDED.events.append("plain parse")


class NoHooks(SchemaExtension):
    pass


class FailsInExecute(SchemaExtension):
    def on_execute(self) -> Iterator[None]:
        RECORDED.events.append("failing execute: before")
        yield
        raise RuntimeError("failed after execution")


@strawberry.type
class Query:
    @strawberry.field
    def here(self) -> str:
        RECORDED.events.append("resolver")
        return "here"


class WrappedOnceSchema(strawberry.Schema):
    """Strawberry's schema with only the app schema's runner (ApiSchema also masks escaped errors)."""

    create_extensions_runner = ApiSchema.create_extensions_runner


def _run(schema: strawberry.Schema) -> tuple[list[str], Any, Any]:
    RECORDED.events = []
    result = asyncio.run(schema.execute("{ here }"))
    return RECORDED.events, result.data, [e.message for e in result.errors or []], result.extensions  # type: ignore[return-value]


@pytest.mark.parametrize(
    "extensions",
    [
        [SyncHooks, AsyncHooks, PlainHook, NoHooks],
        [AsyncHooks, NoHooks, SyncHooks, PlainHook],
        [SyncHooks, FailsInExecute, AsyncHooks],
    ],
    ids=["sync-first", "async-first", "a-hook-fails"],
)
def test_runner__same_events_order_errors_and_results_as_strawberrys(extensions: list[type[SchemaExtension]]) -> None:
    theirs = _run(strawberry.Schema(query=Query, extensions=extensions))
    ours = _run(WrappedOnceSchema(query=Query, extensions=extensions))
    assert ours == theirs
    assert "resolver" in theirs[0]
    assert isinstance(WrappedOnceSchema(query=Query).create_extensions_runner(None, []), HookRunner)  # type: ignore[arg-type]

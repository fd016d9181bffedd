"""The private names of other libraries this code still relies on, each behind one function here.

Strawberry has no public way to the first two, aiodataloader none to the third; everything
else the executors need from Strawberry, graphql-core and aiodataloader is public or our own. Each reliance is held to
its behaviour by tests/graphql_api/execution/test_library_internals.py, which names it and
fails loudly when an upgrade moves it; the lock file pins the versions it was written against.
"""

from __future__ import annotations

from typing import Any

import strawberry
from aiodataloader import DataLoader
from graphql import GraphQLResolveInfo, GraphQLSchema


def graphql_schema(schema: strawberry.Schema) -> GraphQLSchema:
    """The graphql-core schema Strawberry built and executes (``Schema._schema``).

    What the document analyses (cost, plans) walk, and what the schema file is printed from.
    """
    built = schema._schema
    if not isinstance(built, GraphQLSchema):  # pragma: no cover - the test catches a move first
        raise TypeError("strawberry.Schema._schema is no longer the graphql-core schema")
    return built


def resolve_info(info: strawberry.Info[Any, Any]) -> GraphQLResolveInfo[Any]:
    """graphql-core's resolve info under Strawberry's ``Info`` (``Info._raw_info``).

    A connection reads its field's nodes and the document's fragments there, to plan the
    relations of its page (schema/types/connection.py); Strawberry's Info exposes neither.
    """
    raw = info._raw_info
    # Strawberry's own copy of graphql-core's NamedTuple (with its operation context), not a subclass.
    if not all(hasattr(raw, name) for name in ("field_nodes", "fragments", "operation")):  # pragma: no cover
        raise TypeError("strawberry.Info._raw_info is no longer graphql-core's resolve info")
    return raw


def dataloader_queue(loader: DataLoader[Any, Any]) -> list[Any]:
    """The queue a DataLoader is collecting keys into (aiodataloader's ``_queue``).

    aiodataloader dispatches a whole queue as one batch and swaps in a new list as it does:
    the list's identity tells which batch a key just queued belongs to
    (execution/batch_loader.py), so every consumer of a batch can wait on it once.
    """
    queue = loader._queue
    if not isinstance(queue, list):  # pragma: no cover - the test catches a move first
        raise TypeError("aiodataloader.DataLoader._queue is no longer the list of queued keys")
    return queue

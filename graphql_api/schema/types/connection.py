"""Relay connections over datastore pages, with signed per-edge cursors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

import strawberry

from datastore.table.pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, Page, StartKey
from graphql_api.execution import fields
from graphql_api.execution.errors import bad_input
from graphql_api.execution.library_internals import resolve_info
from graphql_api.execution.loaders import ListFetch, list_key
from graphql_api.request.context import RequestContext
from graphql_api.request.cursors import CursorCodec
from graphql_api.schema.types import relations

N = TypeVar("N")

# The arguments every list field takes, described once.
First = Annotated[
    int,
    strawberry.argument(
        description=f"How many items to return: 0 to {MAX_PAGE_SIZE}, default {DEFAULT_PAGE_SIZE}. "
        "Outside that range: BAD_USER_INPUT."
    ),
]
After = Annotated[
    str | None,
    strawberry.argument(
        description="Return the items after this cursor (an edge's `cursor` or `pageInfo.endCursor` "
        "from this same list); omit it for the first page. A cursor from another list or "
        "organisation, or an edited one, is BAD_USER_INPUT."
    ),
]


@dataclass(frozen=True, slots=True)
class CursorSource:
    """What an edge's cursor is made of; signed only if a client selects ``cursor``.

    Signing costs a few microseconds an edge, which a 1,000-edge page pays for nothing
    when the client reads only ``pageInfo.endCursor`` (or no cursor at all).
    """

    codec: CursorCodec
    scope: str
    name: str

    def encode(self, start_key: StartKey) -> str:
        return self.codec.encode(self.scope, self.name, start_key)


def _start_cursor(page_info: PageInfo) -> str | None:
    first = page_info.first_key
    return None if first is None else page_info.source.encode(first)


def _end_cursor(page_info: PageInfo) -> str | None:
    last = page_info.last_key
    return None if last is None else page_info.source.encode(last)


@strawberry.type(description="Where this page sits in its list, and the cursors to move on from it.")
class PageInfo:
    has_next_page: bool = strawberry.field(
        description="True when more items follow; fetch them with `after: endCursor`."
    )
    has_previous_page: bool = strawberry.field(
        description="True when this page was asked for with `after` (items come before it)."
    )
    # The page's first and last start keys, signed into cursors only if a client selects them
    # (two signatures a page, which Q7's thousand pages of applications paid for nothing).
    source: strawberry.Private[CursorSource]
    first_key: strawberry.Private[StartKey | None]
    last_key: strawberry.Private[StartKey | None]

    @strawberry.field(
        description="The first edge's cursor; null for an empty page.", metadata=fields.read(_start_cursor)
    )
    def start_cursor(self) -> str | None:
        return _start_cursor(self)

    @strawberry.field(
        description="The last edge's cursor, to pass as `after` for the next page; null for an empty page.",
        metadata=fields.read(_end_cursor),
    )
    def end_cursor(self) -> str | None:
        return _end_cursor(self)


@strawberry.type(description="One item of a list, with the cursor that continues the list after it.")
class Edge(Generic[N]):
    node: N = strawberry.field(description="The item.")
    start_key: strawberry.Private[StartKey]
    source: strawberry.Private[CursorSource]

    @strawberry.field(description="Pass as `after` to continue the list after this edge.")
    def cursor(self) -> str:
        return self.source.encode(self.start_key)


@strawberry.type(description="A page of a list; ask for the next with `after: pageInfo.endCursor`.")
class Connection(Generic[N]):
    edges: list[Edge[N]] = strawberry.field(description="This page's items, in the list's order.")
    page_info: PageInfo = strawberry.field(description="Whether more items follow, and the cursors to fetch them.")


def first_in_range(first: object) -> bool:
    return isinstance(first, int) and 0 <= first <= MAX_PAGE_SIZE


def check_first(first: int) -> int:
    if not first_in_range(first):
        raise bad_input("first", f"must be between 0 and {MAX_PAGE_SIZE}")
    return first


async def paginate(
    info: strawberry.Info[RequestContext, None],
    fetch: ListFetch,
    name: str,
    convert: Callable[[Any], N],
    first: int,
    after: str | None,
    *,
    parent: str | None = None,
    descending: bool = False,
) -> Connection[N]:
    """One page of a list through the request's list loader, its nodes' relations loaded.

    ``fetch`` reads a page of the list of ``parent`` (None: the caller's organisation itself),
    ``convert`` makes each node. ``name`` identifies the list (field, parent and order);
    cursors are bound to it and to the caller's tenant, so a cursor is only ever accepted by
    the list that issued it. The
    to-one relations the query selects on the nodes are loaded for the whole page at once
    (types/relations.py) before the connection is returned.
    """
    context = info.context
    check_first(first)
    tenant = context.session.require_tenant().org_id
    codec = context.session.services.cursors
    start = None if after is None else codec.decode(after, tenant, name)
    page = await context.loaders.lists.page(list_key(fetch, parent, first, start, descending))
    context.session.response_budget.charge(page.items)
    connection = to_connection(page, convert, codec, tenant, name, start)
    if connection.edges:
        await _load_relations(info, [edge.node for edge in connection.edges])
    return connection


def prefetch_page(
    context: RequestContext,
    fetch: ListFetch,
    parent: str,
    arguments: Mapping[str, Any],
    *,
    descending: bool = False,
) -> asyncio.Future[Page[Any]] | None:
    """The first page ``paginate`` will ask its loader for, asked now (fields.prefetch): the same
    list key, so ``paginate`` finds it in the loader's cache. None, and nothing read, for a
    page after a cursor or a ``first`` that ``paginate`` refuses."""
    first = arguments.get("first", DEFAULT_PAGE_SIZE)
    if arguments.get("after") is not None or not first_in_range(first):
        return None
    return context.loaders.lists.read_ahead(list_key(fetch, parent, first, None, descending))


async def _load_relations(info: strawberry.Info[RequestContext, None], nodes: list[Any]) -> None:
    context = info.context
    raw = resolve_info(info)  # Strawberry's Info exposes no fragments; graphql-core's info does
    target, variables = type(nodes[0]), info.variable_values

    def build() -> relations.RelationPlan:
        return relations.Selection(raw.fragments, variables).connection_plan(target, raw.field_nodes)

    # Read once per field, node type and @skip/@include values, with the document's analyses.
    analyses = context.operation.analyses
    plan = (
        build()
        if analyses is None
        else analyses.relation_plan(raw.field_nodes[0], raw.operation, target, variables, build)
    )
    await relations.load(context.loaders, nodes, plan)


def to_connection(
    page: Page[Any],
    convert: Callable[[Any], N],
    codec: CursorCodec,
    scope: str,
    name: str,
    start: StartKey | None,
) -> Connection[N]:
    source = CursorSource(codec, scope, name)
    edges = [
        Edge(node=convert(item), start_key=cursor, source=source)
        for item, cursor in zip(page.items, page.cursors, strict=True)
    ]
    return Connection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=page.has_next,
            has_previous_page=start is not None,
            source=source,
            first_key=page.cursors[0] if page.cursors else None,
            last_key=page.cursors[-1] if page.cursors else None,
        ),
    )


__all__ = [
    "DEFAULT_PAGE_SIZE",
    "After",
    "Connection",
    "Edge",
    "First",
    "PageInfo",
    "check_first",
    "first_in_range",
    "paginate",
    "prefetch_page",
    "to_connection",
]

"""A connection's cursors: signed when a query reads them, the same by either executor's path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import GraphQLObjectType

from datastore.table.pagination import Page, StartKey
from graphql_api.execution.fields import read_of
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.request.cursors import CursorCodec
from graphql_api.schema.executable import build_schema
from graphql_api.schema.types.connection import PageInfo, to_connection


class CountingCodec(CursorCodec):
    """The real codec, counting its signatures."""

    def __init__(self) -> None:
        super().__init__("secret")
        self.signed = 0

    def encode(self, tenant: str, connection: str, start_key: StartKey) -> str:
        self.signed += 1
        return super().encode(tenant, connection, start_key)


KEYS = [{"pk": "A", "sk": str(n)} for n in range(3)]


def _reads() -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    type_ = graphql_schema(build_schema()).type_map["PageInfo"]
    assert isinstance(type_, GraphQLObjectType)
    start, end = read_of(type_.fields["startCursor"]), read_of(type_.fields["endCursor"])
    assert start is not None and end is not None
    return start, end


def test_to_connection__no_cursor_signed_until_one_is_read() -> None:
    codec = CountingCodec()
    connection = to_connection(Page(["a", "b", "c"], KEYS, True), str.upper, codec, "T1", "list", None)
    assert codec.signed == 0
    assert [edge.node for edge in connection.edges] == ["A", "B", "C"]
    info = connection.page_info
    assert info.has_next_page is True and info.has_previous_page is False
    start_read, end_read = _reads()
    # The plans' read and the resolver (graphql-core's path) give the same signed cursors.
    for start, end in ((start_read(info), end_read(info)), (info.start_cursor(), info.end_cursor())):
        assert codec.decode(start, "T1", "list") == KEYS[0]
        assert codec.decode(end, "T1", "list") == KEYS[-1]
    assert codec.signed == 4
    assert connection.edges[1].cursor() == codec.encode("T1", "list", KEYS[1])


def test_to_connection__empty_page__null_cursors() -> None:
    codec = CountingCodec()
    info: PageInfo = to_connection(Page([], [], False), str, codec, "T1", "list", {"pk": "A"}).page_info
    start_read, end_read = _reads()
    assert info.has_previous_page is True
    assert start_read(info) is None and end_read(info) is None
    assert info.start_cursor() is None and info.end_cursor() is None
    assert codec.signed == 0

"""The ``id`` of the page-node types: encoded when a query selects it, the same either way it is read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import strawberry
from graphql import GraphQLObjectType

from graphql_api.execution import ids
from graphql_api.execution.fields import read_of
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.schema.executable import build_schema
from graphql_api.schema.types.node import ID_DESCRIPTION, Node, encoded_id

SCHEMA = graphql_schema(build_schema())


@pytest.mark.parametrize(
    ("type_name", "attributes", "parts"),
    [
        ("Employee", {"emp_id": "E1"}, ("E1",)),
        ("Department", {"dept_id": "D1"}, ("D1",)),
        ("JobPosting", {"job_id": "J1"}, ("J1",)),
        ("Application", {"job_id": "J1", "app_id": "A1"}, ("J1", "A1")),
    ],
)
def test_page_node_id__declared_read__is_the_global_id_of_its_parts(
    type_name: str, attributes: dict[str, str], parts: tuple[str, ...]
) -> None:
    type_ = SCHEMA.type_map[type_name]
    assert isinstance(type_, GraphQLObjectType)
    field = type_.fields["id"]
    assert field.description == ID_DESCRIPTION and str(field.type) == "ID!"
    read = read_of(field)
    assert read is not None
    assert read(SimpleNamespace(**attributes)) == ids.encode(type_name, *parts)


@strawberry.type
class _Pair(Node):
    id: strawberry.ID = encoded_id("Pair", "left", "right")
    left: strawberry.Private[str]
    right: strawberry.Private[str]


@strawberry.type
class _Query:
    @strawberry.field
    def pair(self) -> _Pair:
        return _Pair(left="L", right="R")


def test_encoded_id__resolver__same_id_as_its_read_and_no_id_to_construct() -> None:
    """The resolver (graphql-core's path: mutations, fallbacks) answers the id the plans read."""
    result = strawberry.Schema(_Query, types=[_Pair]).execute_sync("{ pair { id } }")
    assert result.errors is None and result.data == {"pair": {"id": ids.encode("Pair", "L", "R")}}

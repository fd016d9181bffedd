"""The schema's enums and scalars (graphql_api/schema/types/scalars.py): a member is named by one lookup."""

from __future__ import annotations

from enum import Enum

import pytest
from graphql import GraphQLEnumType, GraphQLError

from datastore.kinds import entities
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.schema.executable import build_schema
from graphql_api.schema.types.scalars import SortOrder

SCHEMA = graphql_schema(build_schema())
ENUMS: list[tuple[str, type[Enum]]] = [
    ("Plan", entities.Plan),
    ("OrganizationStatus", entities.OrganizationStatus),
    ("Role", entities.Role),
    ("EmployeeStatus", entities.EmployeeStatus),
    ("JobPostingStatus", entities.JobStatus),
    ("ApplicationStatus", entities.ApplicationStatus),
    ("SortOrder", SortOrder),
]


def enum_type(name: str) -> GraphQLEnumType:
    found = SCHEMA.type_map[name]
    assert isinstance(found, GraphQLEnumType)
    return found


@pytest.mark.parametrize(("name", "enum"), ENUMS, ids=[name for name, _ in ENUMS])
def test_output__every_member_or_its_value__serialised_as_its_name(name: str, enum: type[Enum]) -> None:
    graphql_enum = enum_type(name)
    for member in enum:
        assert graphql_enum.serialize(member) == graphql_enum.coerce_output_value(member) == member.name
        assert graphql_enum.serialize(member.value) == member.name  # a raw value: graphql-core's lookup


def test_output__every_enum_of_the_schema__has_the_member_lookup() -> None:
    for named in SCHEMA.type_map.values():
        wrapped = getattr(named, "wrapped_cls", None)
        if isinstance(named, GraphQLEnumType) and wrapped is not None:
            assert {named.coerce_output_value(member) for member in wrapped} == set(named.values)


def test_output__not_a_value__graphql_error() -> None:
    with pytest.raises(GraphQLError):
        enum_type("Role").coerce_output_value("WIZARD")
    with pytest.raises((GraphQLError, ValueError)):
        enum_type("Role").coerce_output_value(entities.JobStatus.OPEN)  # a member of another enum

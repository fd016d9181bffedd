"""The schema's enums and scalars (graphql_api/types/scalars.py)."""

from __future__ import annotations

from enum import Enum

import pytest
from graphql import GraphQLEnumType

from datastore import entities
from graphql_api.schema import build_schema
from graphql_api.types.scalars import output

ENUMS: list[tuple[str, type[Enum]]] = [
    ("Plan", entities.Plan),
    ("OrganizationStatus", entities.OrganizationStatus),
    ("Role", entities.Role),
    ("EmployeeStatus", entities.EmployeeStatus),
    ("JobPostingStatus", entities.JobStatus),
    ("ApplicationStatus", entities.ApplicationStatus),
]


@pytest.mark.parametrize(("name", "enum"), ENUMS, ids=[name for name, _ in ENUMS])
def test_output__every_member__serialised_as_its_name(name: str, enum: type[Enum]) -> None:
    graphql_enum = build_schema()._schema.type_map[name]
    assert isinstance(graphql_enum, GraphQLEnumType)
    for member in enum:
        assert graphql_enum.serialize(output(member)) == graphql_enum.serialize(member) == member.name

"""input_paths: the one table that places a datastore field in each mutation's input."""

from __future__ import annotations

from typing import get_args

import pytest
from graphql import GraphQLInputObjectType, GraphQLNonNull, GraphQLObjectType

from datastore.errors import Field
from graphql_api.bulk import csv_file
from graphql_api.bulk.rows import ROW_FIELDS
from graphql_api.execution.errors import TYPE_NAMES
from graphql_api.schema.executable import build_schema
from graphql_api.schema.mutations import input_paths
from graphql_api.schema.mutations.input_paths import INPUT_PATHS


def _input_fields(mutation: str) -> set[str]:
    schema = build_schema()._schema  # strawberry keeps graphql-core's schema here
    assert schema.mutation_type is not None
    input_type = schema.mutation_type.fields[mutation].args["input"].type
    assert isinstance(input_type, GraphQLNonNull) and isinstance(input_type.of_type, GraphQLInputObjectType)
    return set(input_type.of_type.fields)


def test_every_mutation__a_row_of_paths_into_its_own_input_as_the_schema_names_it() -> None:
    schema = build_schema()._schema
    assert schema.mutation_type is not None
    assert set(INPUT_PATHS) == set(schema.mutation_type.fields)
    for mutation, paths in INPUT_PATHS.items():
        carriers = {path.removeprefix("input.") for path in paths.values()}
        assert all(path.startswith("input.") for path in paths.values()), mutation
        assert carriers <= _input_fields(mutation), mutation
        assert set(paths) <= set(get_args(Field)), mutation


def test_checked__a_path_to_a_field_the_input_lacks__refused_at_import() -> None:
    broken = {**input_paths._DECLARED, "publishJobPosting": {"job_id": "jobId"}}
    with pytest.raises(ValueError, match="PublishJobPostingInput has no field jobId"):
        input_paths._checked(broken)


def test_checked__a_mutation_without_a_row__refused_at_import() -> None:
    missing = {name: row for name, row in input_paths._DECLARED.items() if name != "revokeApiKey"}
    with pytest.raises(ValueError, match="revokeApiKey has no row"):
        input_paths._checked(missing)


def test_row_fields__the_row_inputs_fields_and_the_csv_columns() -> None:
    schema = build_schema()._schema
    row_type = schema.type_map["ImportEmployeeRow"]
    assert isinstance(row_type, GraphQLInputObjectType)
    assert set(ROW_FIELDS.values()) <= set(row_type.fields)
    assert set(ROW_FIELDS.values()) <= {*csv_file.REQUIRED, *csv_file.OPTIONAL}


def test_not_found_names__types_of_the_schema() -> None:
    schema = build_schema()._schema
    for entity, name in TYPE_NAMES.items():
        assert isinstance(schema.type_map[name], GraphQLObjectType), entity

"""input_paths: where a datastore field sits in a mutation's input."""

from __future__ import annotations

import pytest
import strawberry
from graphql import GraphQLInputObjectType, GraphQLNonNull
from strawberry.types.base import get_object_definition

from graphql_api.schema import input_paths
from graphql_api.schema.executable import build_schema
from graphql_api.schema.mutation import Mutation


@input_paths.declare(jobId="id")
@strawberry.input
class ExampleInput:
    id: strawberry.ID
    first_name: str
    idempotency_key: str | None = None


def test_path__same_name__input_field_in_camel_case() -> None:
    assert input_paths.of(ExampleInput).path("firstName") == "input.firstName"
    assert input_paths.of(ExampleInput).path("idempotencyKey") == "input.idempotencyKey"


def test_path__declared_rename__the_input_field() -> None:
    assert input_paths.of(ExampleInput).path("jobId") == "input.id"


def test_path__field_the_input_lacks__the_whole_input() -> None:
    assert input_paths.of(ExampleInput).path("departmentId") == "input"


def test_declare__rename_to_a_missing_field__fails_at_import() -> None:
    with pytest.raises(ValueError, match="has no field nope"):

        @input_paths.declare(jobId="nope")
        @strawberry.input
        class Broken:
            id: strawberry.ID


def test_of__undeclared_input__its_own_fields() -> None:
    @strawberry.input
    class Plain:
        last_name: str

    assert input_paths.of(Plain) == input_paths.InputPaths(frozenset({"lastName"}), {})


def test_every_mutation_input__fields_as_the_schema_names_them() -> None:
    """The camelCase names input_paths derives are the schema's own, for every mutation."""
    schema = build_schema()
    mutation_type = schema._schema.mutation_type  # strawberry keeps graphql-core's schema here
    assert mutation_type is not None
    for field in get_object_definition(Mutation, strict=True).fields:
        [argument] = field.arguments
        assert isinstance(argument.type, type)
        graphql_field = mutation_type.fields[schema.config.name_converter.get_graphql_name(field)]
        input_type = graphql_field.args["input"].type
        assert isinstance(input_type, GraphQLNonNull) and isinstance(input_type.of_type, GraphQLInputObjectType)
        assert input_paths.of(argument.type).fields == set(input_type.of_type.fields), field.name

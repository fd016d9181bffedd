"""The executable schema: root types plus the extensions every request goes through."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.schema.config import StrawberryConfig

from graphql_api.errors import ErrorCodes
from graphql_api.mutation import Mutation
from graphql_api.query import Query
from graphql_api.types.organization import Subscription


def build_schema(
    extensions: Sequence[type[SchemaExtension] | Callable[[], SchemaExtension]] = (),
    *,
    batch_max_operations: int = 0,
) -> strawberry.Schema:
    """``batch_max_operations`` > 0 accepts a JSON array of that many operations; 0 refuses."""
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        types=[Subscription],
        extensions=[ErrorCodes, *extensions],
        config=StrawberryConfig(
            auto_camel_case=True,
            batching_config={"max_operations": batch_max_operations} if batch_max_operations else None,
        ),
    )


def schema_sdl() -> str:
    """The schema in SDL, as committed in schema.graphql."""
    return build_schema().as_str() + "\n"

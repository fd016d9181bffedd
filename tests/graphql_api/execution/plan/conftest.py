"""The differential fixture: the app with and without compiled plans, over the demo data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from datastore.store import Datastore
from graphql_api.settings.api import ApiSettings
from tests.graphql_api.execution.plan.differential import Differential, differential
from tests.graphql_api.fixtures import Demo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture(scope="session")
def both(client: DynamoDBClient, table_name: str, api_settings: ApiSettings, demo: Demo) -> Iterator[Differential]:
    yield from differential(Datastore(client, table_name), api_settings)

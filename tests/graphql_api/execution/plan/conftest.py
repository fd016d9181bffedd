"""The differential fixture: the app with and without compiled plans, over the demo data."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.execution.plan.differential import Differential, differential
from tests.graphql_api.fixtures import Demo


@pytest.fixture(scope="session")
def both(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, demo: Demo
) -> Iterator[Differential]:
    yield from differential(new_datastore(table_name), api_settings)

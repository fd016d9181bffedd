"""A second live server in development mode (GraphiQL's "Sign in as" on) over the demo data."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from graphql_api.app import create_app
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.fixtures import TEST_SECRET, Demo
from tests.graphql_api.live import serving


@pytest.fixture(scope="session")
def development_settings() -> ApiSettings:
    return ApiSettings.from_env({"HR_ENV": "development", "JWT_SECRET": TEST_SECRET})


@pytest.fixture(scope="session")
def development(
    new_datastore: DatastoreFactory, table_name: str, demo: Demo, development_settings: ApiSettings
) -> Iterator[httpx.Client]:
    """A client of the development server; ``demo`` has loaded Acme and Globex."""
    with serving(create_app(new_datastore(table_name), development_settings)) as session:
        yield session

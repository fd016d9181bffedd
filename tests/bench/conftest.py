"""The bench's variants run against the API tests' live server and demo organisations."""

from tests.graphql_api.conftest import api, api_settings, demo, http, server_url

__all__ = ["api", "api_settings", "demo", "http", "server_url"]

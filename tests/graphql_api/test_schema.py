"""The schema as clients and code generators see it."""

from __future__ import annotations

from pathlib import Path

import httpx

from graphql_api.schema import schema_sdl
from tests.graphql_api.conftest import GraphQLClient

ROOT = Path(__file__).resolve().parents[2]


def test_schema_file__equals_the_schema_the_code_builds() -> None:
    committed = (ROOT / "schema.graphql").read_text()
    assert committed == schema_sdl(), "run `python server.py export-schema` and commit schema.graphql"


def test_introspection__lists_the_node_types(anonymous: GraphQLClient) -> None:
    body = anonymous.query('{ __type(name: "Node") { possibleTypes { name } } }')
    names = {t["name"] for t in body["data"]["__type"]["possibleTypes"]}
    assert names == {"Organization", "Subscription", "Department", "Employee", "JobPosting", "Application"}


def test_graphiql__page_loads_in_a_browser(http: httpx.Client) -> None:
    response = http.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()

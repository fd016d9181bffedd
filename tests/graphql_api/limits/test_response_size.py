"""MAX_RESPONSE_BYTES: charged page by page as the result is built (limits/response_size.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
import pytest

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo
from graphql_api.app import create_app
from graphql_api.execution.errors import ApiError
from graphql_api.limits.response_size import ResponseBudget
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.directory import DIRECTORY, Directory, write_directory
from tests.graphql_api.execution.test_introspection_cost import GRAPHIQL
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture(scope="module")
def directory(client: DynamoDBClient, table_name: str, dynamo: AsyncDynamo) -> Directory:
    return write_directory(client, dynamo, table_name)


def test_budget__at_the_bound__accepted_and_one_past__refused() -> None:
    page = [{"name": "x" * 10}, {"name": "y" * 20}]
    size = len(orjson.dumps(page))
    ResponseBudget(size).charge(page)
    with pytest.raises(ApiError) as refused:
        ResponseBudget(size - 1).charge(page)
    assert refused.value.extensions == {"code": "BAD_USER_INPUT", "limit": "responseBytes", "maxBytes": size - 1}


def test_budget__once_exceeded__every_later_page_refused() -> None:
    budget = ResponseBudget(10)
    with pytest.raises(ApiError):
        budget.charge(["a long enough item"])
    with pytest.raises(ApiError):
        budget.charge([])  # even an empty page: nothing more is built


def run(
    new_datastore: DatastoreFactory, table_name: str, api: Api, directory: Directory, settings: ApiSettings, cap: int
) -> tuple[dict[str, object], int]:
    app = create_app(new_datastore(table_name), with_settings(settings, max_response_bytes=cap))
    with serving(app) as http, calls.listening() as log:
        response = http.post(
            "/graphql", json={"query": DIRECTORY}, headers={"Authorization": f"Bearer {api.token(directory.admin)}"}
        )
        body: dict[str, object] = response.json()
        return body, log.count("Query")


def test_response_size__under_the_cap__answered(
    new_datastore: DatastoreFactory, table_name: str, api: Api, api_settings: ApiSettings, directory: Directory
) -> None:
    body, _ = run(new_datastore, table_name, api, directory, api_settings, 4 * 1024 * 1024)
    assert "errors" not in body
    assert len(orjson.dumps(body)) > 20_000  # 200 employees: well past the small caps below


def test_response_size__past_the_cap__one_coded_error_and_no_data(
    new_datastore: DatastoreFactory, table_name: str, api: Api, api_settings: ApiSettings, directory: Directory
) -> None:
    body, _ = run(new_datastore, table_name, api, directory, api_settings, 20_000)
    assert body.get("data") is None  # refused as a whole: no data entry (GraphQL over HTTP)
    assert body["errors"] == [
        {
            "message": "the response would be larger than 20000 bytes; ask for fewer objects with `first`",
            "extensions": {"code": "BAD_USER_INPUT", "limit": "responseBytes", "maxBytes": 20000},
        }
    ]


def test_response_size__first_page_past_the_cap__nothing_beneath_it_is_read(
    new_datastore: DatastoreFactory, table_name: str, api: Api, api_settings: ApiSettings, directory: Directory
) -> None:
    # Checked while the result is built: the departments page alone is over 100 bytes, so
    # none of the five employee lists under it is ever read from DynamoDB.
    _, uncapped = run(new_datastore, table_name, api, directory, api_settings, 4 * 1024 * 1024)
    body, capped = run(new_datastore, table_name, api, directory, api_settings, 100)
    assert body.get("data") is None  # refused as a whole: no data entry (GraphQL over HTTP)
    assert uncapped - capped == directory.departments


def test_response_size__introspection__charged_whole_past_the_cap_one_error(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    """Introspection builds no pages: its answer is charged once it is built."""
    app = create_app(new_datastore(table_name), with_settings(api_settings, max_response_bytes=50_000))
    with serving(app) as http:
        small = http.post("/graphql", json={"query": '{ __type(name: "Query") { name } }'}).json()
        full = http.post("/graphql", json={"query": GRAPHIQL})
    assert small["data"] == {"__type": {"name": "Query"}}
    body = full.json()
    assert body.get("data") is None
    assert [error["extensions"] for error in body["errors"]] == [
        {"code": "BAD_USER_INPUT", "limit": "responseBytes", "maxBytes": 50_000}
    ]
    assert len(full.content) < 1000

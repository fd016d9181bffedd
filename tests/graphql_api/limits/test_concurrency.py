"""MAX_CONCURRENT_REQUESTS: past the cap, HTTP 503 with Retry-After at once (limits/concurrency.py).

Real concurrent clients against a server capped at one request in flight, each asking for a
DynamoDB-backed directory page: whoever arrives while another is being served is refused.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import httpx
import pytest

from datastore.aws.client import AsyncDynamo
from graphql_api.app import create_app
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.directory import DIRECTORY, Directory, write_directory
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CLIENTS = 12
BUSY = {
    "errors": [
        {
            "message": "the server is busy; retry after a second",
            "extensions": {"code": "UNAVAILABLE", "retryable": True, "limit": "concurrentRequests"},
        }
    ]
}


@pytest.fixture(scope="module")
def directory(client: DynamoDBClient, table_name: str, dynamo: AsyncDynamo) -> Directory:
    return write_directory(client, dynamo, table_name)


def test_concurrency__past_the_cap__503_with_retry_after_and_the_rest_answered(
    new_datastore: DatastoreFactory, table_name: str, api: Api, api_settings: ApiSettings, directory: Directory
) -> None:
    app = create_app(new_datastore(table_name), with_settings(api_settings, max_concurrent_requests=1))
    headers = {"Authorization": f"Bearer {api.token(directory.admin)}"}
    with serving(app) as http:
        base_url = str(http.base_url)
        responses: list[httpx.Response] = []
        probes: list[httpx.Response] = []
        for _ in range(10):  # rounds until a collision is seen (the first round nearly always)
            barrier = threading.Barrier(CLIENTS + 1)

            def ask(
                barrier: threading.Barrier = barrier,
            ) -> httpx.Response:
                with httpx.Client(base_url=base_url, timeout=60) as own:
                    own.get("/healthz")  # connect first, so the requests below leave together
                    barrier.wait()
                    return own.post("/graphql", json={"query": DIRECTORY}, headers=headers)

            def probe(barrier: threading.Barrier = barrier) -> httpx.Response:
                with httpx.Client(base_url=base_url, timeout=60) as own:
                    barrier.wait()
                    return own.get("/healthz")

            with ThreadPoolExecutor(CLIENTS + 1) as pool:
                futures = [pool.submit(ask) for _ in range(CLIENTS)] + [pool.submit(probe)]
                done = [future.result() for future in futures]
            responses += done[:-1]
            probes.append(done[-1])
            if any(r.status_code == 503 for r in responses):
                break
        after = http.post("/graphql", json={"query": DIRECTORY}, headers=headers)

    refused = [r for r in responses if r.status_code == 503]
    answered = [r for r in responses if r.status_code != 503]
    print(f"\n{len(refused)} of {len(responses)} concurrent requests refused with 503 (cap 1)")
    assert refused, "no request was refused at a cap of one"
    assert answered, "every request was refused"
    for response in refused:
        assert response.headers["retry-after"] == "1"
        assert response.json() == BUSY
    for response in answered:
        assert response.status_code == 200
        body = response.json()
        assert "errors" not in body, body
        assert len(body["data"]["organization"]["departments"]["edges"]) == directory.departments
    assert all(p.status_code == 200 for p in probes), "health probes are exempt from the cap"
    assert after.status_code == 200 and "errors" not in after.json(), "the slot is given back"

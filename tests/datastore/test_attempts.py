"""A write's "maybe written" speaks for every attempt botocore made, not only its last.

Each attempt's fault is injected at ``before-send`` (as tests/datastore/faults.py does), so
botocore's own retry loop runs between them; the client makes DYNAMODB_MAX_ATTEMPTS (2).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from datastore import departments
from datastore.errors import Unavailable
from tests.conftest import Tenant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

REFUSED, READ_TIMEOUT, THROTTLED, FAILED = "refused", "read-timeout", "throttled", "http-500"


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


@contextmanager
def attempts_failing(client: DynamoDBClient, *faults: str) -> Iterator[list[str]]:
    """The call's attempts fail with ``faults`` in turn; yields the faults injected."""
    injected: list[str] = []

    def fail(request: Any, **_: Any) -> AWSResponse:
        fault = faults[min(len(injected), len(faults) - 1)]
        injected.append(fault)
        url = str(request.url)
        if fault == REFUSED:
            raise EndpointConnectionError(endpoint_url=url)
        if fault == READ_TIMEOUT:
            raise ReadTimeoutError(endpoint_url=url)
        kind, status = ("ThrottlingException", 400) if fault == THROTTLED else ("InternalServerError", 500)
        body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{kind}", "message": "injected"})
        return AWSResponse(url, status, {"Content-Type": "application/x-amz-json-1.0"}, _Raw(body.encode()))

    client.meta.events.register("before-send.dynamodb", cast(Callable[..., None], fail), unique_id="hr-attempts-test")
    try:
        yield injected
    finally:
        client.meta.events.unregister("before-send.dynamodb", unique_id="hr-attempts-test")


@pytest.mark.parametrize(
    ("faults", "maybe_written"),
    [
        ((REFUSED, REFUSED), False),  # nothing ever left
        ((THROTTLED, THROTTLED), False),  # refused outright each time
        ((READ_TIMEOUT, REFUSED), True),  # the first may have been applied; the last says nothing of it
        ((FAILED, THROTTLED), True),
        ((READ_TIMEOUT, READ_TIMEOUT), True),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, tuple) else str(value),
)
def test_write__every_attempt_failed__maybe_written_iff_any_attempt_may_have_reached_dynamodb(
    tenant: Tenant, client: DynamoDBClient, faults: tuple[str, ...], maybe_written: bool
) -> None:
    with attempts_failing(client, *faults) as injected, pytest.raises(Unavailable) as failed:
        departments.create_department(tenant.table, name="Ops")
    assert injected == list(faults)  # botocore's two attempts, each with its fault
    assert failed.value.maybe_written is maybe_written

"""A write's "maybe written" speaks for every attempt botocore made, not only its last.

Each attempt's fault is injected at ``before-send`` (tests/datastore/faults.py, one planned
fault per request), so botocore's own retry loop runs between them; the client makes
DYNAMODB_MAX_ATTEMPTS (2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from datastore import departments
from datastore.errors import Unavailable
from tests.conftest import Tenant
from tests.datastore.faults import CONNECTION_ERROR, READ_TIMEOUT, SERVER_ERROR, THROTTLED, failing_calls

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.mark.parametrize(
    ("planned", "maybe_written"),
    [
        ((CONNECTION_ERROR, CONNECTION_ERROR), False),  # nothing ever left
        ((THROTTLED, THROTTLED), False),  # refused outright each time
        ((READ_TIMEOUT, CONNECTION_ERROR), True),  # the first may have been applied; the last says nothing of it
        ((SERVER_ERROR, THROTTLED), True),
        ((READ_TIMEOUT, READ_TIMEOUT), True),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, tuple) else str(value),
)
def test_write__every_attempt_failed__maybe_written_iff_any_attempt_may_have_reached_dynamodb(
    tenant: Tenant, client: DynamoDBClient, planned: tuple[str, ...], maybe_written: bool
) -> None:
    with failing_calls(client) as injected, pytest.raises(Unavailable) as failed:
        injected.planned = list(planned)
        departments.create_department(tenant.table, name="Ops")
    assert (injected.injected, injected.planned) == (2, [])  # botocore's two attempts, each with its fault
    assert failed.value.maybe_written is maybe_written

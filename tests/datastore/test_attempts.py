"""A write's "maybe written" speaks for every attempt aiodynamo made, not only its last
(datastore/attempts.py).

Each attempt's fault is planned in the client's send hook (tests/datastore/faults.py, one
planned fault per attempt), so aiodynamo's own retry loop runs between them; the client
makes DYNAMODB_MAX_ATTEMPTS (2).
"""

from __future__ import annotations

import pytest

from datastore import departments, ids, layout, transact
from datastore.async_client import AsyncDynamo
from datastore.config import DatastoreSettings
from datastore.errors import Unavailable
from tests.blocking import run
from tests.conftest import Tenant
from tests.datastore.faults import CONNECTION_ERROR, READ_TIMEOUT, SERVER_ERROR, THROTTLED, failing_calls


@pytest.fixture(autouse=True)
def two_attempts(settings: DatastoreSettings) -> None:
    assert settings.max_attempts == 2  # what the planned faults below are two of


@pytest.mark.parametrize(
    ("planned", "maybe_written"),
    [
        ((CONNECTION_ERROR, CONNECTION_ERROR), False),  # nothing ever left
        ((THROTTLED, THROTTLED), False),  # refused outright each time
        ((READ_TIMEOUT, CONNECTION_ERROR), True),  # the first may have been applied; the last says nothing of it
        ((SERVER_ERROR, THROTTLED), True),
        ((READ_TIMEOUT, READ_TIMEOUT), True),
        ((CONNECTION_ERROR, SERVER_ERROR), True),  # the last attempt itself may have been
    ],
    ids=lambda value: "-".join(value) if isinstance(value, tuple) else str(value),
)
def test_write__every_attempt_failed__maybe_written_iff_any_attempt_may_have_reached_dynamodb(
    tenant: Tenant, dynamo: AsyncDynamo, planned: tuple[str, ...], maybe_written: bool
) -> None:
    with failing_calls(dynamo) as injected, pytest.raises(Unavailable) as failed:
        injected.planned = list(planned)
        run(departments.create_department(tenant.table, name="Ops"))
    assert (injected.injected, injected.planned) == (2, [])  # aiodynamo's two attempts, each with its fault
    assert failed.value.maybe_written is maybe_written


def test_write__refused_after_an_attempt_that_may_have_landed__maybe_written(
    tenant: Tenant, dynamo: AsyncDynamo
) -> None:
    """The second attempt reaches DynamoDB, which refuses the request (a transaction may not
    touch an item twice): refused, yet the first attempt, unanswered, may have been applied."""
    key = layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())
    with failing_calls(dynamo) as injected, pytest.raises(Unavailable, match="refused") as failed:
        injected.planned = [READ_TIMEOUT]
        run(tenant.table.write([transact.delete(key), transact.delete(key)]))
    assert failed.value.cause == "ValidationException" and failed.value.maybe_written
    with pytest.raises(Unavailable, match="refused") as refused:
        run(tenant.table.write([transact.delete(key), transact.delete(key)]))
    assert not refused.value.maybe_written  # refused on its only attempt: nothing was applied


def test_read__every_attempt_failed__never_maybe_written(tenant: Tenant, dynamo: AsyncDynamo) -> None:
    with failing_calls(dynamo) as injected, pytest.raises(Unavailable) as failed:
        injected.planned = [READ_TIMEOUT, SERVER_ERROR]
        run(departments.get_department(tenant.table, ids.new_id()))
    assert injected.injected == 2
    assert not failed.value.maybe_written


def test_write__after_a_failed_one__starts_with_a_clean_note(tenant: Tenant, dynamo: AsyncDynamo) -> None:
    """A note belongs to one write: the next write in the same context (one coroutine) is
    judged on its own attempts."""

    async def two_writes() -> list[Unavailable]:
        failed = []
        for _write in range(2):
            try:
                await departments.create_department(tenant.table, name="Ops")
            except Unavailable as error:
                failed.append(error)
        return failed

    with failing_calls(dynamo) as injected:
        injected.planned = [READ_TIMEOUT, READ_TIMEOUT, CONNECTION_ERROR, CONNECTION_ERROR]
        first, second = run(two_writes())
    assert injected.injected == 4
    assert first.maybe_written and not second.maybe_written

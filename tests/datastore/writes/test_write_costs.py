"""What each write costs: the items its transaction writes and the WCU DynamoDB reports.

DynamoDB Local reports a flat 2.0 per transaction for the table (plus 4.0 when an item with
GSI1 attributes is written), whatever the item count; AWS charges 2 WCU per item and KB in a
transaction (every item here is under 1 KB), plus the index writes. Both are printed.

Run with ``-s`` to print the table:
``.venv/bin/python -m pytest tests/datastore/writes/test_write_costs.py -q -s``
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from datastore.aws.calls import Call, CallLog
from datastore.kinds.entities import Plan
from datastore.table.scoped import Table
from datastore.tenants import jobs, organizations
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory, unique_domain
from tests.datastore.writes import test_idempotency
from tests.datastore.writes.test_idempotency import Scenario, Write

TRANSACT = "TransactWriteItems"

# Items in each write's transaction without an idempotency key: its own items plus the audit
# event. A key adds the idempotency record.
# Every employee write also puts one name entry per prefix of its folded names plus the
# directory's (datastore/values/names.py): "Once Only" has 7 ("", o, on, onc, once, onl, only); the
# tenant factory's "Test Person xxxxxx" has 17 ("", 4 of "test", 12 of "person xxxxxx": no
# prefix ends in a space). A name change deletes the old entries whose keys changed: renaming
# "Person xxxxxx" to "Changed" changes every sort key, so 17 deletes and 12 puts.
ONCE_ONLY_ENTRIES = 7
TEST_PERSON_ENTRIES = 17
RENAMED_ENTRIES = 12  # "", 4 of "test", 7 of "changed"
EXPECTED_ITEMS = {
    "create_department": 2,
    "update_department": 2,
    # domain check, employee, identity, email pointer, membership, headcount, event, name entries
    "create_employee": 7 + ONCE_ONLY_ENTRIES,
    # employee, event (+1 membership copy when in a department), new entries, old entries deleted
    "update_employee": 2 + RENAMED_ENTRIES + TEST_PERSON_ENTRIES,
    "move_employee": 6 + TEST_PERSON_ENTRIES,  # employee, 2 memberships, 2 headcounts, event, entries
    "terminate_employee": 4 + TEST_PERSON_ENTRIES,  # employee, membership, headcount, event, entries
    "create_job": 3,  # job, department check, event
    "update_job": 2,
    "publish_job": 2,
    "close_job": 2,
    "apply_to_job": 5,  # application, applicant guard, job counters (checked open), employee check, event
    "set_application_status": 3,  # application, job counters, event
    "withdraw_application": 3,  # application, job counters, event
}


def update_job(t: Tenant) -> Write:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Welder"))
    return lambda key: run(
        jobs.update_job(t.table, job.job_id, expected_version=1, title="Senior welder", idempotency_key=key)
    )


SCENARIOS: list[Scenario] = [*test_idempotency.SCENARIOS, update_job]


def _measure(log: CallLog, write: Callable[[], object]) -> Call:
    start = len(log.snapshot())
    write()
    [transaction] = [c for c in log.snapshot()[start:] if c.operation == TRANSACT]
    return transaction


def _row(name: str, plain: Call, keyed: Call) -> str:
    count, keyed_count = len(plain.params["TransactItems"]), len(keyed.params["TransactItems"])
    return (
        f"{name:<24} {count:>5} {plain.write_units:>9.1f} {2 * count:>9}"
        f" {keyed_count:>11} {keyed.write_units:>9.1f} {2 * keyed_count:>9}"
    )


def test_write_costs(make_tenant: TenantFactory, platform: Table, call_log: CallLog) -> None:
    rows = [
        f"{'write':<24} {'items':>5} {'WCU local':>9} {'WCU AWS':>9}"
        f" {'items (key)':>11} {'WCU local':>9} {'WCU AWS':>9}"
    ]
    for scenario in SCENARIOS:
        name = scenario.__name__
        plain = _measure(call_log, partial(scenario(make_tenant()), None))
        keyed = _measure(call_log, partial(scenario(make_tenant()), "cost-key"))
        assert len(plain.params["TransactItems"]) == EXPECTED_ITEMS[name], name
        assert len(keyed.params["TransactItems"]) == EXPECTED_ITEMS[name] + 1, name
        # DynamoDB Local's figure for a transaction is not AWS's 2 WCU per item and KB.
        assert keyed.write_units >= plain.write_units > 0, name
        rows.append(_row(name, plain, keyed))
    domain = unique_domain()
    org = _measure(
        call_log,
        lambda: run(
            organizations.create_organization(
                platform,
                name="Costly Inc",
                plan=Plan.FREE,
                email_domains=[domain],
                admin_email=f"cost@{domain}",
                admin_first_name="Cost",
                admin_last_name="Ly",
            )
        ),
    )
    # Organisation, subscription, domain marker, admin employee, identity, email pointer, event,
    # and the admin's 7 name entries ("", c, co, cos, cost, l, ly).
    assert len(org.params["TransactItems"]) == 14
    rows.append(f"{'create_organization':<24} {14:>5} {org.write_units:>9.1f} {28:>9}")
    print("\n" + "\n".join(rows))


@pytest.mark.parametrize("name", sorted(EXPECTED_ITEMS))
def test_every_write_is_measured(name: str) -> None:
    assert name in {s.__name__ for s in SCENARIOS}

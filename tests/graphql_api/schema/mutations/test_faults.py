"""Transaction conflicts and throttling injected at the client boundary (tests/datastore/faults.py).

The live server shares the session's event loop client, so a send hook on it refuses the server's
TransactWriteItems calls as DynamoDB would. Each test runs on a server of each executor (the
compiled plans, graphql-core alone): a mutation runs on graphql-core either way, and must
answer the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo
from datastore.tenants import departments, employees
from graphql_api.app import create_app
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant
from tests.datastore import faults
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import EXECUTORS, serving, with_settings
from tests.graphql_api.schema.mutations.documents import MOVE_EMPLOYEE, audit_actions, error, gid
from tests.graphql_api.schema.mutations.test_invariants import in_parallel, outcome

REASONS = [faults.TRANSACTION_CONFLICT, faults.THROTTLING_ERROR]


@pytest.fixture(scope="module", params=EXECUTORS.values(), ids=list(EXECUTORS))
def api(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, request: Any) -> Iterator[Api]:
    """This module's server, with the executor of the test's parameter."""
    settings = with_settings(api_settings, compiled_plans=request.param)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield Api(http, settings)


def headcounts(tenant: Tenant, *depts: departments.Department) -> list[int]:
    found = [run(departments.get_department(tenant.table, d.dept_id, consistent=True)) for d in depts]
    return [d.headcount if d is not None else -1 for d in found]


@pytest.mark.parametrize("reason", REASONS)
def test_refused_transactions__are_retried_and_the_write_lands_once(
    api: Api, tenant: Tenant, dynamo: AsyncDynamo, reason: str
) -> None:
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    person = tenant.employee(eng)
    # A conflict is retried up to 8 tries, throttling within DYNAMODB_MAX_ATTEMPTS (2) like every
    # call's (datastore/aws/retries.py): each refused as often as its bound still lets it land.
    times = 3 if reason == faults.TRANSACTION_CONFLICT else 1
    with faults.injected(dynamo) as injected, calls.listening() as log:
        injected.cancel(reason, times=times)
        data = api.admin_of(tenant).data(MOVE_EMPLOYEE, {"input": {"id": gid(person), "departmentId": gid(ops)}})
    assert data["moveEmployee"]["toDepartment"] == {"id": gid(ops), "headcount": 1}
    assert injected.injected == times
    # One call in the call log, its attempts seen at the client boundary.
    assert log.count("TransactWriteItems") == 1 and len(injected.sent) == times + 1
    assert headcounts(tenant, eng, ops) == [0, 1]
    assert audit_actions(tenant).count("employee.move") == 1


@pytest.mark.parametrize("reason", REASONS)
def test_exhausted_retries__clean_retryable_unavailable_error_and_nothing_written(
    api: Api, tenant: Tenant, dynamo: AsyncDynamo, reason: str
) -> None:
    eng, ops = tenant.department("Eng"), tenant.department("Ops")
    person = tenant.employee(eng)
    before = audit_actions(tenant)
    with faults.injected(dynamo) as injected, calls.listening() as log:
        injected.cancel(reason, times=None)
        body = api.admin_of(tenant).query(MOVE_EMPLOYEE, {"input": {"id": gid(person), "departmentId": gid(ops)}})
    found = error(body)
    assert found["extensions"]["code"] == "UNAVAILABLE"
    assert found["extensions"]["retryable"] is True
    assert found["extensions"]["requestId"]
    assert "Traceback" not in found["message"] and "botocore" not in found["message"]
    # Bounded: the retry policy's attempts (datastore/aws/retries.py), not an endless loop.
    assert log.count("TransactWriteItems") == 1 and 1 < len(injected.sent) <= 10
    assert run(employees.get_employee(tenant.table, person.emp_id, consistent=True)) == person
    assert headcounts(tenant, eng, ops) == [1, 0]
    assert audit_actions(tenant) == before


def test_concurrent_moves_with_injected_conflicts__headcounts_still_hold(
    api: Api, tenant: Tenant, dynamo: AsyncDynamo
) -> None:
    admin = api.admin_of(tenant)
    depts = [tenant.department(f"D{i}") for i in range(3)]
    people = [tenant.employee(depts[i % 3]) for i in range(9)]
    with faults.injected(dynamo) as injected:
        injected.every(3)
        results = in_parallel(
            [
                lambda p=p, d=d: admin.query(MOVE_EMPLOYEE, {"input": {"id": gid(p), "departmentId": gid(d)}})
                for p in people
                for d in depts
            ]
        )
    assert injected.injected > 0
    assert set(map(outcome, results)) <= {"OK", "CONFLICT"}
    stored = [run(employees.get_employee(tenant.table, p.emp_id, consistent=True)) for p in people]
    for dept, count in zip(depts, headcounts(tenant, *depts), strict=True):
        assert count == sum(1 for e in stored if e is not None and e.department_id == dept.dept_id)
    assert sum(headcounts(tenant, *depts)) == len(people)

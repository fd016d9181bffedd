"""Idempotent retries: one write per idempotency key, replayed from its record."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING

import pytest
from aiodynamo.http.types import Request, Response

from datastore.aws.calls import CallLog
from datastore.aws.client import AsyncDynamo
from datastore.errors import IdempotencyMismatch, InProgress, InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import ApplicationStatus, Role
from datastore.table.pagination import PageRequest
from datastore.tenancy import keys
from datastore.tenancy.scope import TenantScope
from datastore.tenants import applications, departments, employees, jobs
from datastore.values import ids, items
from datastore.writes import audit, idempotency
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.datastore.faults import on_send, operation_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TRANSACT = "TransactWriteItems"
KEY = "0b6f1c2e-retry-key"

# Each scenario sets up what it needs and returns the keyed write to repeat.
Write = Callable[[str | None], object]
Scenario = Callable[[Tenant], Write]


def create_department(t: Tenant) -> Write:
    return lambda key: run(departments.create_department(t.table, name="Ops", idempotency_key=key))


def update_department(t: Tenant) -> Write:
    dept = t.department()
    return lambda key: run(departments.update_department(t.table, dept.dept_id, name="Renamed", idempotency_key=key))


def create_employee(t: Tenant) -> Write:
    dept = t.department()
    email = t.email(f"once-{ids.new_id().lower()}")
    return lambda key: run(
        employees.create_employee(
            t.table,
            email=email,
            first_name="Once",
            last_name="Only",
            department_id=dept.dept_id,
            role=Role.EMPLOYEE,
            idempotency_key=key,
        )
    )


def update_employee(t: Tenant) -> Write:
    emp = t.employee()
    return lambda key: run(
        employees.update_employee(t.table, emp.emp_id, expected_version=1, last_name="Changed", idempotency_key=key)
    )


def move_employee(t: Tenant) -> Write:
    emp, target = t.employee(t.department("A")), t.department("B")
    return lambda key: run(employees.move_employee(t.table, emp.emp_id, target.dept_id, idempotency_key=key))


def terminate_employee(t: Tenant) -> Write:
    emp = t.employee(t.department())
    return lambda key: run(employees.terminate_employee(t.table, emp.emp_id, idempotency_key=key))


def create_job(t: Tenant) -> Write:
    dept = t.department()
    return lambda key: run(jobs.create_job(t.table, department_id=dept.dept_id, title="Welder", idempotency_key=key))


def publish_job(t: Tenant) -> Write:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Welder"))
    return lambda key: run(jobs.publish_job(t.table, job.job_id, idempotency_key=key))


def close_job(t: Tenant) -> Write:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Welder"))
    return lambda key: run(jobs.close_job(t.table, job.job_id, idempotency_key=key))


def _open_job(t: Tenant) -> str:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Welder"))
    return run(jobs.publish_job(t.table, job.job_id)).job_id


def apply_to_job(t: Tenant) -> Write:
    job_id, emp = _open_job(t), t.employee()
    return lambda key: run(applications.apply_to_job(t.table, job_id, emp.emp_id, idempotency_key=key))


def set_application_status(t: Tenant) -> Write:
    job_id, emp = _open_job(t), t.employee()
    app = run(applications.apply_to_job(t.table, job_id, emp.emp_id))
    return lambda key: run(
        applications.set_application_status(
            t.table, job_id, app.app_id, ApplicationStatus.REJECTED, idempotency_key=key
        )
    )


def withdraw_application(t: Tenant) -> Write:
    job_id, emp = _open_job(t), t.employee()
    app = run(applications.apply_to_job(t.table, job_id, emp.emp_id))
    return lambda key: run(applications.withdraw_application(t.table, job_id, app.app_id, idempotency_key=key))


SCENARIOS: list[Scenario] = [
    create_department,
    update_department,
    create_employee,
    update_employee,
    move_employee,
    terminate_employee,
    create_job,
    publish_job,
    close_job,
    apply_to_job,
    set_application_status,
    withdraw_application,
]


def audit_count(t: Tenant) -> int:
    return len(run(audit.list_audit_events(t.table, PageRequest(first=100))).items)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_retry__same_key_same_input__writes_once_and_returns_the_first_result(
    tenant: Tenant, scenario: Scenario, call_log: CallLog
) -> None:
    write = scenario(tenant)
    start = len(call_log.snapshot())
    first = write(KEY)
    events = audit_count(tenant)
    replay_start = len(call_log.snapshot())

    again = write(KEY)

    assert again == first
    assert [c.operation for c in call_log.snapshot()[replay_start:]] == ["GetItem"]
    transactions = [c for c in call_log.snapshot()[start:] if c.operation == TRANSACT]
    assert len(transactions) == 1
    assert audit_count(tenant) == events


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_write__without_a_key__writes_with_its_event_and_no_record(
    tenant: Tenant, scenario: Scenario, call_log: CallLog
) -> None:
    write = scenario(tenant)
    events = audit_count(tenant)
    start = len(call_log.snapshot())

    write(None)

    assert audit_count(tenant) == events + 1
    [transaction] = [c for c in call_log.snapshot()[start:] if c.operation == TRANSACT]
    assert "ClientRequestToken" not in transaction.params
    records = layout.IDEMPOTENCY.partition(tenant.org_id, "")
    assert not any(pk.startswith(records) for pk in transaction.partition_keys())


def test_retry__same_key_other_input__refused_and_nothing_written(tenant: Tenant, call_log: CallLog) -> None:
    first = run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))
    start = len(call_log.snapshot())

    with pytest.raises(IdempotencyMismatch) as refused:
        run(departments.create_department(tenant.table, name="Sales", idempotency_key=KEY))

    assert refused.value.field == "idempotency_key"
    assert isinstance(refused.value, InvalidInput)
    assert [c.operation for c in call_log.snapshot()[start:]] == ["GetItem"]
    listed = run(departments.list_departments(tenant.table, PageRequest(first=100))).items
    assert listed == [first]


def test_retry__same_key_other_operation__refused(tenant: Tenant) -> None:
    dept = run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))

    with pytest.raises(IdempotencyMismatch):
        run(departments.update_department(tenant.table, dept.dept_id, name="Ops", idempotency_key=KEY))


def test_retry__same_key_other_caller__refused(tenant: Tenant) -> None:
    run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))
    someone_else = tenant.table.with_scope(TenantScope(tenant.org_id, ids.new_id()))

    with pytest.raises(IdempotencyMismatch):
        run(departments.create_department(someone_else, name="Ops", idempotency_key=KEY))


def test_same_key_in_two_tenants__independent(make_tenant: TenantFactory) -> None:
    one, two = make_tenant("One"), make_tenant("Two")

    a = run(departments.create_department(one.table, name="Ops", idempotency_key=KEY))
    b = run(departments.create_department(two.table, name="Ops", idempotency_key=KEY))

    assert a.org_id == one.org_id and b.org_id == two.org_id and a.dept_id != b.dept_id


@pytest.mark.parametrize("key", ["", "x" * 129, "has space", "tab\tkey", "é"])
def test_key__invalid__refused_before_any_call(tenant: Tenant, key: str, call_log: CallLog) -> None:
    start = len(call_log.snapshot())
    with pytest.raises(InvalidInput, match="idempotency_key"):
        run(departments.create_department(tenant.table, name="Ops", idempotency_key=key))
    assert call_log.snapshot()[start:] == []


def test_key__128_printable_characters__accepted(tenant: Tenant) -> None:
    key = ("#Aa0-_:~" * 16)[:128]
    assert run(departments.create_department(tenant.table, name="Ops", idempotency_key=key))


def test_record__tenant_prefixed_with_expiry_result_and_token(
    tenant: Tenant, call_log: CallLog, client: DynamoDBClient, table_name: str
) -> None:
    start = len(call_log.snapshot())
    dept = run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))

    record = run(tenant.table.get(layout.IDEMPOTENCY.key_at(tenant.org_id, KEY), consistent=True))
    assert record is not None
    assert record[keys.PK]["S"] == f"ORG#{tenant.org_id}#IDEM#{KEY}"
    assert record[keys.SK]["S"] == "#IDEMPOTENCY"
    written_at = items.parse_timestamp(record["createdAt"]["S"])
    expires = int(record[layout.EXPIRES_AT]["N"])
    assert expires >= int((written_at + timedelta(hours=24)).timestamp())
    assert layout.DEPARTMENT.read(record["result"]["M"]) == dept
    [transaction] = [c for c in call_log.snapshot()[start:] if c.operation == TRANSACT]
    token = transaction.params["ClientRequestToken"]
    assert 1 <= len(token) <= 36
    ttl = client.describe_time_to_live(TableName=table_name)["TimeToLiveDescription"]
    assert (ttl.get("TimeToLiveStatus"), ttl.get("AttributeName")) == ("ENABLED", layout.EXPIRES_AT)


def test_record__expired_but_not_yet_removed__key_can_be_used_again(
    tenant: Tenant, client: DynamoDBClient, table_name: str
) -> None:
    run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))
    client.update_item(
        TableName=table_name,
        Key=layout.IDEMPOTENCY.key_at(tenant.org_id, KEY).wire(),
        UpdateExpression="SET #e = :past",
        ExpressionAttributeNames={"#e": layout.EXPIRES_AT},
        ExpressionAttributeValues={":past": {"N": "1"}},
    )

    sales = run(departments.create_department(tenant.table, name="Sales", idempotency_key=KEY))

    assert sales.name == "Sales"


@pytest.fixture
def hide_next_record(dynamo: AsyncDynamo) -> Iterator[Callable[..., None]]:
    """Once armed, answers the next GetItem of an idempotency record (the next ``times``) with
    "no item", in the client's send hook.

    It stands for a check that ran just before a concurrent first attempt committed.
    """
    armed: list[int] = [0]
    lock = threading.Lock()
    record = layout.IDEMPOTENCY.key_at("", "").sk.encode()

    async def hook(request: Request) -> Response | None:
        if operation_of(request) != "GetItem":
            return None
        with lock:
            if not armed[0] or record not in (request.body or b""):
                return None
            armed[0] -= 1
        return Response(200, b"{}")

    def arm(times: int = 1) -> None:
        with lock:
            armed[0] = times

    with on_send(dynamo, hook):
        yield arm


@pytest.mark.parametrize("same_token", [True, False], ids=["token-reused", "token-expired"])
def test_record_appears_between_check_and_write__the_write_replays(
    tenant: Tenant,
    hide_next_record: Callable[..., None],
    call_log: CallLog,
    monkeypatch: pytest.MonkeyPatch,
    same_token: bool,
) -> None:
    first = run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))
    events = audit_count(tenant)
    if not same_token:
        # Past DynamoDB's ten minutes the token no longer deduplicates: the record's
        # conditional put is what refuses the second write.
        monkeypatch.setattr(idempotency.IdempotencyRequest, "token", property(lambda _: ids.new_id()))
    hide_next_record()
    start = len(call_log.snapshot())

    again = run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))

    assert again == first
    assert [c.operation for c in call_log.snapshot()[start:]] == ["GetItem", TRANSACT, "GetItem"][
        : 3 if same_token else 2
    ]
    assert audit_count(tenant) == events
    assert run(departments.list_departments(tenant.table, PageRequest(first=100))).items == [first]


def test_first_attempt_written_but_its_record_not_readable__in_progress_then_replayed(
    tenant: Tenant, hide_next_record: Callable[..., None]
) -> None:
    """DynamoDB refuses the token of a transaction it has (the first attempt's), and the record
    is not there to read: this attempt has no answer to give but "in progress"; a retry reads it."""
    first = run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))
    events = audit_count(tenant)
    hide_next_record(2)  # the check before the write, and the read after the refusal

    with pytest.raises(InProgress):
        run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY))

    assert run(departments.create_department(tenant.table, name="Ops", idempotency_key=KEY)) == first
    assert audit_count(tenant) == events


def test_concurrent_retries__one_write__every_caller_gets_the_same_result(tenant: Tenant) -> None:
    dept = tenant.department()

    def create(_: int) -> object:
        return run(
            employees.create_employee(
                tenant.table,
                email=tenant.email("racer"),
                first_name="Race",
                last_name="Condition",
                department_id=dept.dept_id,
                role=Role.EMPLOYEE,
                idempotency_key=KEY,
            )
        )

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(create, range(8)))

    assert all(result == results[0] for result in results)
    current = run(departments.get_department(tenant.table, dept.dept_id, consistent=True))
    assert current is not None and current.headcount == 1


def test_fingerprint__canonical_over_key_order_and_enums() -> None:
    a = idempotency.fingerprint("employee.create", "x", {"role": Role.ADMIN, "email": "a@b.co"})
    b = idempotency.fingerprint("employee.create", "x", {"email": "a@b.co", "role": "admin"})
    assert a == b
    assert a != idempotency.fingerprint("employee.create", "y", {"email": "a@b.co", "role": "admin"})

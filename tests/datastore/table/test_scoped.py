"""The Table gateway: batching, pagination, the tenant guard and error mapping."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pytest
from aiodynamo.http.types import Request, Response

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo, Mirror
from datastore.aws.retries import Schedule
from datastore.config import DatastoreSettings
from datastore.dev.local import free_port
from datastore.errors import Conflict, DatastoreError, InvalidInput, NotFound, ScopeViolation, Unavailable
from datastore.kinds import layout
from datastore.kinds.entities import EmailDomain, Employee, Plan
from datastore.table import transact, updates
from datastore.table.pagination import PageRequest
from datastore.table.scoped import Table, even_chunks
from datastore.tenancy import keys
from datastore.tenancy.scope import PlatformScope, SignInScope, TenantScope
from datastore.tenants import departments, employees, organizations
from datastore.values import ids, items
from tests.blocking import run
from tests.conftest import TEST_RETRY, Tenant, TenantFactory
from tests.datastore.faults import on_send, operation_of
from tests.datastore.support import gsi_order, raw_employees, write_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ROSTER_SIZE = 250
PAGE_SIZE = 7


@dataclass(frozen=True)
class Roster:
    """An organisation of 250 employees (the admin and 249 bulk ones) in one department."""

    table: Table
    department_id: str
    employees: list[Employee]


@pytest.fixture(scope="module")
def roster(client: DynamoDBClient, dynamo: AsyncDynamo, table_name: str) -> Roster:
    platform = Table(dynamo, table_name, PlatformScope(), retry=TEST_RETRY)
    unique = ids.new_id().lower()
    org, admin = run(
        organizations.create_organization(
            platform,
            name=f"Roster {unique}",
            plan=Plan.ENTERPRISE,
            email_domains=[f"roster{unique}.example"],
            admin_email=f"roster@roster{unique}.example",
            admin_first_name="R",
            admin_last_name="A",
        )
    )
    table = platform.with_scope(TenantScope(org.org_id, admin.emp_id))
    dept = run(departments.create_department(table, name="Everyone"))
    bulk = raw_employees(org.org_id, ROSTER_SIZE - 1, dept)
    write_items(
        client, table_name, [item for emp in bulk for item in (layout.EMPLOYEE.item(emp), layout.MEMBERSHIP.item(emp))]
    )
    return Roster(table, dept.dept_id, sorted([admin, *bulk], key=gsi_order))


# --- batch reads -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hits", "misses", "duplicates"),
    [(0, 0, 0), (1, 0, 0), (0, 1, 0), (100, 0, 0), (99, 1, 0), (100, 1, 0), (90, 5, 5), (200, 10, 40), (240, 10, 0)],
)
def test_batch_get__any_number_of_keys__ceil_distinct_over_100_calls_in_order(
    roster: Roster, hits: int, misses: int, duplicates: int
) -> None:
    org_id = roster.table.tenant.org_id
    found = roster.employees[:hits]
    missing = [ids.new_id() for _ in range(misses)]
    wanted_ids = [emp.emp_id for emp in found] + missing
    # Duplicates repeat asked ids (hits and misses alike); the order asked is shuffled.
    wanted_ids += [wanted_ids[i % len(wanted_ids)] for i in range(duplicates)]
    random.Random(len(wanted_ids)).shuffle(wanted_ids)
    total = len(wanted_ids)
    assert total in (0, 1, 100, 101, 250)
    distinct = len(set(wanted_ids))
    by_id = {emp.emp_id: emp for emp in found}
    table = roster.table
    with calls.listening() as log:
        result = run(table.batch_get([layout.EMPLOYEE.key_at(org_id, e) for e in wanted_ids]))
    assert log.operations() == ["BatchGetItem"] * math.ceil(distinct / 100)
    sizes = [len(call.params["RequestItems"][table.name]["Keys"]) for call in log.calls]
    assert all(size <= 100 for size in sizes)
    assert not sizes or max(sizes) - min(sizes) <= 1  # 101 keys: 51 and 50, never 100 and 1
    asked = [k["SK"]["S"] for call in log.calls for k in call.params["RequestItems"][table.name]["Keys"]]
    assert len(asked) == len(set(asked)) == distinct
    assert [None if item is None else layout.EMPLOYEE.read(item) for item in result] == [
        by_id.get(e) for e in wanted_ids
    ]


def test_get_employees__misses_and_duplicates__one_result_per_key_in_order(roster: Roster) -> None:
    first, second = roster.employees[0], roster.employees[1]
    unknown = ids.new_id()
    with calls.listening() as log:
        result = run(employees.get_employees(roster.table, [second.emp_id, unknown, first.emp_id, second.emp_id]))
    assert result == [second, None, first, second]
    assert log.operations() == ["BatchGetItem"]


class UnprocessedStub:
    """A test double at the client boundary (its send hook): the first ``times`` BatchGetItem
    calls come back with every key unprocessed and nothing read, as DynamoDB does under throttling."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.stubbed = 0
        self.real = 0

    async def __call__(self, request: Request) -> Response | None:
        if operation_of(request) != "BatchGetItem":
            return None
        if self.stubbed >= self.times:
            self.real += 1
            return None
        self.stubbed += 1
        body = json.loads(request.body or b"{}")
        unprocessed = {name: {"Keys": asked["Keys"]} for name, asked in body["RequestItems"].items()}
        return Response(
            200, json.dumps({"Responses": {name: [] for name in unprocessed}, "UnprocessedKeys": unprocessed}).encode()
        )


@pytest.fixture
def stub_unprocessed(dynamo: AsyncDynamo) -> Iterator[Callable[[int], UnprocessedStub]]:
    """Installs an UnprocessedStub on the session's client for this test only."""
    installed: list[UnprocessedStub] = []

    def install(times: int) -> UnprocessedStub:
        stub = UnprocessedStub(times)
        dynamo.hooks.add(stub)
        installed.append(stub)
        return stub

    yield install
    for stub in installed:
        dynamo.hooks.remove(stub)


def recording(sleeps: list[float]) -> Callable[[float], Any]:
    """A Table's sleep that records its delays and does not wait."""

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    return sleep


def test_batch_get__unprocessed_keys__retried_with_backoff_until_done(
    roster: Roster, stub_unprocessed: Callable[[int], UnprocessedStub]
) -> None:
    sleeps: list[float] = []
    schedule = Schedule(attempts=5, base=0.01, cap=0.04)
    policy = replace(TEST_RETRY, unprocessed=schedule)
    table = Table(roster.table.dynamo, roster.table.name, roster.table.scope, retry=policy, sleep=recording(sleeps))
    wanted = roster.employees[:3]
    stub = stub_unprocessed(3)
    with calls.listening() as log:
        result = run(employees.get_employees(table, [emp.emp_id for emp in wanted]))
    assert result == wanted
    assert log.operations() == ["BatchGetItem"] * 4
    assert (stub.stubbed, stub.real) == (3, 1)
    # Every retry asks again for exactly the keys left unprocessed.
    asked = [call.params["RequestItems"][table.name]["Keys"] for call in log.calls]
    assert all(keys_asked == asked[0] for keys_asked in asked)
    assert len(sleeps) == 3
    # The n-th new call for what is left waits up to base * 2 ** (n - 1), at most the cap.
    assert all(0 <= delay <= min(schedule.cap, schedule.base * 2**n) for n, delay in enumerate(sleeps))


def test_batch_get__unprocessed_keys_past_the_bound__raises_unavailable(
    roster: Roster, stub_unprocessed: Callable[[int], UnprocessedStub]
) -> None:
    sleeps: list[float] = []
    schedule = Schedule(attempts=4, base=0.01, cap=0.04)
    policy = replace(TEST_RETRY, unprocessed=schedule)
    table = Table(roster.table.dynamo, roster.table.name, roster.table.scope, retry=policy, sleep=recording(sleeps))
    stub = stub_unprocessed(schedule.attempts)
    with calls.listening() as log, pytest.raises(Unavailable, match="unprocessed after 4 tries"):
        run(employees.get_employees(table, [roster.employees[0].emp_id]))
    assert log.operations() == ["BatchGetItem"] * schedule.attempts
    assert stub.real == 0
    # A wait is spent only before another try: the error is not delayed by a useless sleep.
    assert len(sleeps) == schedule.attempts - 1


def test_schedule__delay_is_full_jitter_under_the_cap() -> None:
    schedule = Schedule(attempts=8, base=0.1, cap=0.5)
    for retry in range(1, 11):
        assert 0 <= schedule.delay(retry) <= min(0.5, 0.1 * 2 ** (retry - 1))


# --- pagination -------------------------------------------------------------------------


def walk(fetch: Callable[[PageRequest], Any], descending: bool) -> tuple[list[Employee], int, list[bool]]:
    seen: list[Employee] = []
    has_next: list[bool] = []
    after = None
    with calls.listening() as log:
        while True:
            page = run(fetch(PageRequest(first=PAGE_SIZE, after=after, descending=descending)))
            seen.extend(page.items)
            has_next.append(page.has_next)
            if not page.has_next:
                break
            after = page.end_cursor
    return seen, log.count("Query"), has_next


@pytest.mark.parametrize("descending", [False, True], ids=["oldest_first", "newest_first"])
def test_list_employees__250_items_page_size_7__each_once_in_order(roster: Roster, descending: bool) -> None:
    seen, queries, has_next = walk(lambda r: employees.list_employees(roster.table, r), descending)
    expected = roster.employees[::-1] if descending else roster.employees
    assert [e.emp_id for e in seen] == [e.emp_id for e in expected]
    pages = math.ceil(ROSTER_SIZE / PAGE_SIZE)
    assert queries == pages
    assert has_next == [True] * (pages - 1) + [False]


@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_list_department_employees__249_items_page_size_7__each_once_in_order(roster: Roster, descending: bool) -> None:
    seen, queries, _ = walk(
        lambda r: employees.list_department_employees(roster.table, roster.department_id, r), descending
    )
    members = sorted((e for e in roster.employees if e.department_id), key=lambda e: e.emp_id, reverse=descending)
    assert [e.emp_id for e in seen] == [e.emp_id for e in members]
    assert queries == math.ceil(len(members) / PAGE_SIZE)


def test_query_page__exact_multiple_of_page_size__last_page_says_no_next(roster: Roster) -> None:
    seen: list[Employee] = []
    has_next: list[bool] = []
    after = None
    while not has_next or has_next[-1]:
        page = run(employees.list_employees(roster.table, PageRequest(first=50, after=after)))
        seen.extend(page.items)
        has_next.append(page.has_next)
        after = page.end_cursor
    assert has_next == [True] * 4 + [False]
    assert len(seen) == ROSTER_SIZE


def test_query_page__cursor_per_item__resumes_after_that_item(roster: Roster) -> None:
    page = run(employees.list_employees(roster.table, PageRequest(first=10)))
    resumed = run(employees.list_employees(roster.table, PageRequest(first=3, after=page.cursors[4])))
    assert list(resumed.items) == list(page.items[5:8])


@pytest.mark.parametrize("first", [-1, 101])
def test_query_page__page_size_out_of_bounds__invalid_input_and_no_call(roster: Roster, first: int) -> None:
    with calls.listening() as log, pytest.raises(InvalidInput):
        run(employees.list_employees(roster.table, PageRequest(first=first)))
    assert log.operations() == []


def test_query_page__cursor_of_another_list__invalid_input_and_no_call(roster: Roster) -> None:
    members = run(employees.list_department_employees(roster.table, roster.department_id, PageRequest(first=2)))
    everyone = run(employees.list_employees(roster.table, PageRequest(first=2)))
    assert members.end_cursor is not None and everyone.end_cursor is not None
    with calls.listening() as log:
        with pytest.raises(InvalidInput):
            run(employees.list_employees(roster.table, PageRequest(after=members.end_cursor)))
        with pytest.raises(InvalidInput):
            run(
                employees.list_department_employees(
                    roster.table, roster.department_id, PageRequest(after=everyone.end_cursor)
                )
            )
        with pytest.raises(InvalidInput):
            run(employees.list_employees(roster.table, PageRequest(after={**everyone.end_cursor, "GSI1SK": 3})))  # type: ignore[dict-item]
        with pytest.raises(InvalidInput):
            run(employees.list_employees(roster.table, PageRequest(after={"PK": everyone.end_cursor["PK"]})))
    assert log.operations() == []


def test_query_page__cursor_of_another_tenant__invalid_input_and_no_call(roster: Roster, tenant: Tenant) -> None:
    theirs = run(employees.list_employees(roster.table, PageRequest(first=2))).end_cursor
    assert theirs is not None
    with calls.listening() as log, pytest.raises(InvalidInput):
        run(employees.list_employees(tenant.table, PageRequest(after=theirs)))
    assert log.operations() == []


# --- the tenant guard -------------------------------------------------------------------


def test_guard__key_of_another_org__scope_violation_and_no_call(tenant: Tenant, make_tenant: TenantFactory) -> None:
    other = make_tenant("Other")
    theirs = layout.EMPLOYEE.key_at(other.org_id, other.admin.emp_id)
    with calls.listening() as log:
        with pytest.raises(ScopeViolation):
            run(tenant.table.get(theirs))
        with pytest.raises(ScopeViolation):
            run(tenant.table.batch_get([layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id), theirs]))
        with pytest.raises(ScopeViolation):
            run(tenant.table.query(keys.org_pk(other.org_id), limit=1))
        with pytest.raises(ScopeViolation):
            run(tenant.table.query(layout.EMPLOYEE.index_partition(other.org_id), index=keys.GSI1, limit=1))
        with pytest.raises(ScopeViolation):
            run(tenant.table.write([transact.delete(theirs)]))
        with pytest.raises(ScopeViolation):
            run(
                tenant.table.write(
                    [
                        transact.delete(layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())),
                        transact.check(theirs, "attribute_exists(PK)"),
                    ]
                )
            )
        with pytest.raises(ScopeViolation):
            run(tenant.table.get(layout.IDENTITY.key_at(other.admin.email)))
    assert log.operations() == []
    assert run(employees.get_employee(other.table, other.admin.emp_id)) == other.admin


def test_guard__domain_markers__tenants_only_check_them_and_never_write_or_read(tenant: Tenant) -> None:
    marker = layout.EMAIL_DOMAIN.key_at(tenant.domain)
    mine = {":org": items.s(tenant.org_id)}
    platform = tenant.table.with_scope(PlatformScope())
    with calls.listening() as log:
        with pytest.raises(ScopeViolation):
            run(tenant.table.get(marker))
        with pytest.raises(ScopeViolation):
            run(
                tenant.table.write(
                    [transact.put(layout.EMAIL_DOMAIN.item(EmailDomain("stolen.example", tenant.org_id)))]
                )
            )
        with pytest.raises(ScopeViolation):
            run(tenant.table.write([transact.delete(marker), transact.check(marker, "orgId = :org", values=mine)]))
        with pytest.raises(ScopeViolation):
            run(tenant.table.with_scope(SignInScope()).write([transact.check(marker, "orgId = :org", values=mine)]))
        with pytest.raises(ScopeViolation):
            # Without an organisation being provisioned, the operator writes no marker either.
            run(platform.write([transact.put(layout.EMAIL_DOMAIN.item(EmailDomain("x.example", tenant.org_id)))]))
    assert log.operations() == []
    # A check alone is what employee writes send: it passes for the owner.
    run(tenant.table.write([transact.check(marker, "orgId = :org", values=mine)]))


def test_guard__other_orgs_ids__resolve_as_none_like_unknown_ids(tenant: Tenant, make_tenant: TenantFactory) -> None:
    other = make_tenant("Other")
    dept = other.department()
    emp = other.employee(dept)

    assert run(employees.get_employee(tenant.table, emp.emp_id)) is None
    assert run(employees.get_employee(tenant.table, ids.new_id())) is None
    assert run(departments.get_department(tenant.table, dept.dept_id)) is None
    assert run(employees.get_employees(tenant.table, [emp.emp_id, tenant.admin.emp_id])) == [None, tenant.admin]
    assert run(employees.find_employee_id_by_email(tenant.table, emp.email)) is None
    assert list(run(employees.list_department_employees(tenant.table, dept.dept_id, PageRequest())).items) == []


def test_guard__non_tenant_scopes__refuse_tenant_operations_without_a_call(tenant: Tenant) -> None:
    platform = tenant.table.with_scope(PlatformScope())
    sign_in = tenant.table.with_scope(SignInScope())
    with calls.listening() as log:
        for table in (platform, sign_in):
            with pytest.raises(ScopeViolation):
                run(employees.get_employee(table, tenant.admin.emp_id))
            with pytest.raises(ScopeViolation):
                run(table.get(layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)))
        with pytest.raises(ScopeViolation):
            run(sign_in.write([transact.delete(layout.IDENTITY.key_at(tenant.admin.email))]))
        with pytest.raises(ScopeViolation):
            run(platform.write([transact.delete(layout.ORGANIZATION.key_at(tenant.org_id))]))
    assert log.operations() == []


# --- writes and error mapping ------------------------------------------------------------


def test_write__no_ops__makes_no_call(tenant: Tenant) -> None:
    with calls.listening() as log:
        run(tenant.table.write([]))
    assert log.operations() == []


def test_write__one_op__single_conditional_write_mapped_to_its_error(tenant: Tenant) -> None:
    existing = layout.EMPLOYEE.item(tenant.admin)
    with calls.listening() as log, pytest.raises(Conflict, match="mine"):
        run(tenant.table.write([transact.put_new(existing, lambda old: Conflict(f"mine {old is not None}"))]))
    assert log.operations() == ["PutItem"]


def test_write__failed_update_condition__handler_sees_the_old_item(tenant: Tenant) -> None:
    seen: list[items.Item | None] = []

    def handler(old: items.Item | None) -> DatastoreError:
        seen.append(old)
        return NotFound(Employee)

    key = layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)
    with pytest.raises(NotFound):
        run(
            tenant.table.write(
                [
                    transact.update(
                        key,
                        [updates.Set("firstName", items.s("X"))],
                        condition="version = :v",
                        values={":v": items.n(99)},
                        on_failed=handler,
                    )
                ]
            )
        )
    assert seen[0] is not None and seen[0]["empId"] == {"S": tenant.admin.emp_id}
    assert run(employees.get_employee(tenant.table, tenant.admin.emp_id)) == tenant.admin


def test_write__cancelled_transaction__error_of_the_refusing_op_and_nothing_written(tenant: Tenant) -> None:
    new_dept_key = layout.DEPARTMENT.key_at(tenant.org_id, ids.new_id())
    with calls.listening() as log, pytest.raises(InvalidInput, match="second"):
        run(
            tenant.table.write(
                [
                    transact.put({**new_dept_key.wire(), "entity": items.s("Probe")}),
                    transact.check(
                        layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id()),
                        "attribute_exists(PK)",
                        on_failed=lambda _old: InvalidInput("second", "refused"),
                    ),
                ]
            )
        )
    assert log.operations() == ["TransactWriteItems"]
    assert run(tenant.table.get(new_dept_key, consistent=True)) is None


def test_write__lone_condition_check__runs_as_a_transaction(tenant: Tenant) -> None:
    with calls.listening() as log:
        run(
            tenant.table.write(
                [transact.check(layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id), "attribute_exists(PK)")]
            )
        )
    assert log.operations() == ["TransactWriteItems"]


def test_write__more_than_100_ops__refused_without_a_call(tenant: Tenant) -> None:
    ops = [transact.delete(layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())) for _ in range(101)]
    with calls.listening() as log, pytest.raises(ValueError, match="at most 100"):
        run(tenant.table.write(ops))
    assert log.operations() == []


def test_write__request_dynamodb_rejects__typed_unavailable_not_botocore(tenant: Tenant) -> None:
    key = layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())
    # One transaction may not touch an item twice: DynamoDB refuses it with a ValidationException.
    with pytest.raises(Unavailable, match=r"^DynamoDB refused the request$") as refused:
        run(tenant.table.write([transact.delete(key), transact.delete(key)]))
    assert refused.value.cause == "ValidationException"  # for the log, never the message


def test_table__missing_table__typed_unavailable(tenant: Tenant) -> None:
    missing = Table(tenant.table.dynamo, f"no-such-table-{ids.new_id().lower()}", tenant.table.scope)
    with pytest.raises(Unavailable, match=r"^DynamoDB refused the request$") as refused:
        run(missing.get(layout.ORGANIZATION.key_at(tenant.org_id)))
    assert refused.value.cause == "ResourceNotFoundException"
    with pytest.raises(Unavailable) as unwritten:
        run(missing.write([transact.delete(layout.ORGANIZATION.key_at(tenant.org_id))]))
    assert not unwritten.value.maybe_written  # refused outright: nothing was applied


def test_table__unreachable_endpoint__typed_unavailable(settings: DatastoreSettings) -> None:
    port = free_port()
    unreachable = AsyncDynamo(Mirror.of(replace(settings, max_attempts=1), f"http://127.0.0.1:{port}"), None)
    org = ids.new_id()
    table = Table(unreachable, settings.table_name, TenantScope(org))
    with pytest.raises(Unavailable, match="could not be reached"):
        run(table.get(layout.ORGANIZATION.key_at(org)))
    with pytest.raises(Unavailable, match="could not be reached") as single:
        run(table.write([transact.delete(layout.ORGANIZATION.key_at(org))]))
    with pytest.raises(Unavailable, match="could not be reached") as transaction:
        run(
            table.write(
                [transact.delete(layout.ORGANIZATION.key_at(org)), transact.delete(layout.SUBSCRIPTION.key_at(org))]
            )
        )
    # No connection was ever made: nothing was sent, so nothing may have been written.
    assert not single.value.maybe_written and not transaction.value.maybe_written
    run(unreachable.aclose())


@pytest.mark.parametrize(
    ("count", "sizes"),
    [(0, []), (1, [1]), (100, [100]), (101, [51, 50]), (102, [51, 51]), (250, [84, 83, 83]), (1000, [100] * 10)],
)
def test_even_chunks__fewest_calls_of_at_most_100__sizes_within_one(count: int, sizes: list[int]) -> None:
    values = list(range(count))
    chunks = even_chunks(values, 100)
    assert [len(chunk) for chunk in chunks] == sizes
    assert [value for chunk in chunks for value in chunk] == values


def test_get__the_item_and_its_call_recorded_with_its_capacity(tenant: Tenant) -> None:
    key = layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)
    with calls.listening() as log:
        found = run(tenant.table.get(key))
        missing = run(tenant.table.get(layout.EMPLOYEE.key_at(tenant.org_id, ids.new_id())))
    assert found is not None and layout.EMPLOYEE.read(found) == tenant.admin
    assert missing is None
    assert log.operations() == ["GetItem", "GetItem"]
    assert [call.read_units for call in log.snapshot()] == [0.5, 0.5]
    assert all(call.finished is not None and call.error is None for call in log.snapshot())


def test_page__one_page_then_the_next_from_its_cursor(tenant: Tenant, bulk_employees: Any) -> None:
    bulk_employees(tenant.org_id, 9)
    query = employees.employees_of(tenant.organization.org_id)
    first = run(tenant.table.page(query, PageRequest(first=4)))
    second = run(tenant.table.page(query, PageRequest(first=100, after=first.cursors[-1])))
    assert first.has_next and not second.has_next
    assert len(first.items) + len(second.items) == 10  # the admin and nine more
    assert {emp.emp_id for emp in first.items}.isdisjoint(emp.emp_id for emp in second.items)


def test_guard__an_item_of_another_partition_in_a_gets_answer__refused(
    dynamo: AsyncDynamo, tenant: Tenant, make_tenant: TenantFactory
) -> None:
    """What arrives is checked too, not only what is asked (a wrong answer never reaches a tenant)."""
    other = make_tenant("Other")
    their_item = run(other.table.get(layout.EMPLOYEE.key_at(other.org_id, other.admin.emp_id)))

    async def answer_theirs(request: Request) -> Response | None:
        if operation_of(request) != "GetItem":
            return None
        return Response(200, json.dumps({"Item": their_item}).encode())

    with on_send(dynamo, answer_theirs), pytest.raises(ScopeViolation, match=other.org_id):
        run(tenant.table.get(layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)))


def test_guard__an_item_of_another_tenant_among_a_querys_or_a_batchs_items__refused(
    dynamo: AsyncDynamo, tenant: Tenant, make_tenant: TenantFactory
) -> None:
    """What arrives is checked too, every item of a page, on the partition the call read (the
    table's or the index's): one of another tenant among the tenant's own refuses the answer."""
    other = make_tenant("Other")
    my_key = layout.EMPLOYEE.key_at(tenant.org_id, tenant.admin.emp_id)
    my_item = run(tenant.table.get(my_key))
    their_item = run(other.table.get(layout.EMPLOYEE.key_at(other.org_id, other.admin.emp_id)))
    assert my_item is not None and their_item is not None
    # Their index partition under my table partition: a Query of the index reads GSI1PK.
    theirs_on_index = {**my_item, keys.GSI1PK: their_item[keys.GSI1PK]}
    answers: dict[str, dict[str, Any]] = {
        "Query": {"Items": [my_item, my_item, their_item], "Count": 3, "ScannedCount": 3},
        "BatchGetItem": {"Responses": {tenant.table.name: [my_item, their_item]}, "UnprocessedKeys": {}},
    }

    async def answer(request: Request) -> Response | None:
        found = answers.get(operation_of(request))
        return None if found is None else Response(200, json.dumps(found).encode())

    with on_send(dynamo, answer):
        with pytest.raises(ScopeViolation, match=other.org_id):
            run(tenant.table.query(my_key.pk, limit=5))
        with pytest.raises(ScopeViolation, match=other.org_id):
            run(tenant.table.batch_get([my_key]))
        answers["Query"] = {"Items": [my_item, theirs_on_index], "Count": 2, "ScannedCount": 2}
        with pytest.raises(ScopeViolation, match=other.org_id):
            run(tenant.table.page(employees.employees_of(tenant.organization.org_id), PageRequest(first=3)))
        assert len(run(tenant.table.query(my_key.pk, limit=5)).items) == 2  # the table's partition is mine

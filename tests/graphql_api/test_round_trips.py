"""Round trips: at most one wave of DynamoDB calls per nesting level, exact counts, with and without jitter.

A field read ahead (``me``'s applications) goes out a level early: its tests are here too.

The tenant is 20 departments x 50 employees x 3 applications over 150 jobs. Counts are read
twice: from the response's ``extensions.cost`` and from every call any client made meanwhile
(``datastore.aws.calls.listening``), whose waves are also checked level by level.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pytest
from aiodynamo.http.types import Request, Response

from bench.queries import Q1, Q2, Q3
from datastore.aws import calls
from datastore.aws.calls import CallLog
from datastore.aws.client import AsyncDynamo
from datastore.aws.exchange import SendHook
from datastore.dev.seed import Bulk
from datastore.kinds.entities import Employee, Plan
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope
from datastore.tenants import organizations
from graphql_api.app import create_app
from graphql_api.execution import ids
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, unique_domain
from tests.datastore import faults
from tests.graphql_api.fixtures import Api, Demo
from tests.graphql_api.live import serving, with_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEPARTMENTS, EMPLOYEES_EACH, APPLICATIONS_EACH, JOBS = 20, 50, 3, 150

NESTED = (
    "{ organization { departments(first: 20) { edges { node { employees(first: 50) { edges { node { "
    "applications(first: 10) { edges { node { jobPosting { title } } } } } } } } } } } }"
)


@pytest.fixture(scope="module")
def api(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings) -> Iterator[Api]:
    """A server whose limits admit the 20 x 50 x 10 nested query (cost ~11k) and Q4 (100 aliases)."""
    # A deadline for a loaded machine: this test counts round trips, not seconds.
    settings = with_settings(
        api_settings, max_cost=100_000, request_timeout_seconds=120.0, max_tokens=100_000, max_aliases=200
    )
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield Api(http, settings)


@dataclass(frozen=True)
class BigTenant:
    admin: Employee
    distinct_jobs: int
    employees: list[Employee]


@pytest.fixture(scope="module")
def big(client: DynamoDBClient, dynamo: AsyncDynamo, table_name: str) -> BigTenant:
    org, admin = run(
        organizations.create_organization(
            Table(dynamo, table_name, PlatformScope()),
            name="Round Trips",
            plan=Plan.ENTERPRISE,
            email_domains=[domain := unique_domain()],
            admin_email=f"admin@{domain}",
            admin_first_name="Ada",
            admin_last_name="Admin",
        )
    )
    bulk = Bulk(org.org_id)
    departments = [bulk.department(f"Dept {d:02}", EMPLOYEES_EACH) for d in range(DEPARTMENTS)]
    jobs = [bulk.job(departments[n % DEPARTMENTS], n) for n in range(JOBS)]
    n = 0
    for department in departments:
        for _ in range(EMPLOYEES_EACH):
            employee = bulk.employee(department, n)
            for k in range(APPLICATIONS_EACH):
                bulk.apply(jobs[(APPLICATIONS_EACH * n + k) % JOBS], employee, APPLICATIONS_EACH * n + k)
            n += 1
    started = time.monotonic()
    run(bulk.write(Table(dynamo, table_name, PlatformScope())))
    assert time.monotonic() - started < 30
    return BigTenant(admin, len({a.job_id for a in bulk.applications}), bulk.employees)


@pytest.fixture
def jitter(dynamo: AsyncDynamo) -> Iterator[None]:
    """Every DynamoDB call (the read path's, on the event loop) waits a random 0-20 ms before it is sent."""

    async def delay(_request: Request) -> None:
        await asyncio.sleep(random.uniform(0, 0.020))

    with faults.on_send(dynamo, delay):
        yield


def expected_levels(big: BigTenant) -> list[dict[str, int]]:
    return [
        # The caller check (the organisation's and the caller's items in one BatchGetItem,
        # reused by `organization`) runs alongside AP5 (departments), which needs only the
        # organisation's id.
        {"BatchGetItem": 1, "Query": 1},
        {"Query": DEPARTMENTS},  # AP7: each department's members
        {"Query": DEPARTMENTS * EMPLOYEES_EACH},  # AP11: each employee's applications
        {"BatchGetItem": math.ceil(big.distinct_jobs / 100)},  # the distinct jobs
    ]


def run_nested(api: Api, big: BigTenant) -> tuple[dict[str, Any], list[dict[str, int]]]:
    with calls.listening() as log:
        body = api.as_(big.admin).query(NESTED)
    assert "errors" not in body, body["errors"][:3]
    departments = body["data"]["organization"]["departments"]["edges"]
    assert len(departments) == DEPARTMENTS
    titles = [
        a["node"]["jobPosting"]["title"]
        for d in departments
        for e in d["node"]["employees"]["edges"]
        for a in e["node"]["applications"]["edges"]
    ]
    assert len(titles) == DEPARTMENTS * EMPLOYEES_EACH * APPLICATIONS_EACH
    waves = [dict(Counter(call.operation for call in wave)) for wave in log.waves()]
    return body["extensions"]["cost"], waves


def assert_one_wave_per_level(cost: dict[str, Any], waves: list[dict[str, int]], big: BigTenant) -> None:
    levels = expected_levels(big)
    assert waves == levels
    totals: Counter[str] = Counter()
    for level in levels:
        totals.update(level)
    assert cost["requests"] == dict(sorted(totals.items()))
    assert cost["waves"] == len(levels)
    employees = DEPARTMENTS * EMPLOYEES_EACH
    assert cost["itemsRead"] == 2 + DEPARTMENTS + employees * (1 + APPLICATIONS_EACH) + big.distinct_jobs


def test_nested__one_wave_per_level(api: Api, big: BigTenant) -> None:
    cost, waves = run_nested(api, big)
    assert big.distinct_jobs == JOBS
    assert_one_wave_per_level(cost, waves, big)


def test_nested__one_wave_per_level__with_jitter(api: Api, big: BigTenant, jitter: None) -> None:
    for _ in range(2):
        cost, waves = run_nested(api, big)
        assert_one_wave_per_level(cost, waves, big)


def test_nested__nothing_cached_across_requests(api: Api, big: BigTenant) -> None:
    first, _ = run_nested(api, big)
    second, _ = run_nested(api, big)
    assert first["requests"] == second["requests"]
    assert first["itemsRead"] == second["itemsRead"]
    assert first["readCapacityUnits"] == second["readCapacityUnits"]


def test_same_entity_twice__read_once(api: Api, big: BigTenant) -> None:
    my_id = ids.encode("Employee", big.admin.emp_id)
    body = api.as_(big.admin).query(
        "query($id: ID!) { me { email } again: me { firstName } "
        "byId: employee(id: $id) { lastName } asNode: node(id: $id) { id } }",
        {"id": my_id},
    )
    assert "errors" not in body, body["errors"]
    assert body["data"]["asNode"] == {"id": my_id}
    # The caller check reads the caller once, with the organisation; every later ask is served
    # by the loader.
    assert body["extensions"]["cost"]["requests"] == {"BatchGetItem": 1}


def test_same_entity_at_two_depths__read_once_per_level(api: Api, big: BigTenant) -> None:
    """Fifty employees of one department ask for that department: one key, one GetItem."""
    body = api.as_(big.admin).query(
        "{ organization { departments(first: 1) { edges { node { employees(first: 50) { edges { node { "
        "department { name } } } } } } } } }"
    )
    assert "errors" not in body, body["errors"]
    employees = body["data"]["organization"]["departments"]["edges"][0]["node"]["employees"]["edges"]
    assert len(employees) == EMPLOYEES_EACH
    assert body["extensions"]["cost"]["requests"] == {"BatchGetItem": 1, "GetItem": 1, "Query": 2}
    assert body["extensions"]["cost"]["waves"] == 3


# --- the caller check's price on the bench's queries ---------------------------------------
#
# The check reads the organisation's and the caller's items as two keys of the request's first
# entity batch: one BatchGetItem beside the query's own first wave, or none extra when the query
# reads the caller itself (`me`). "Floor" is what hand-written boto3 would send for the data.


def cost_as(api: Api, employee: Employee, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    body = api.as_(employee).query(query, variables)
    assert "errors" not in body, body["errors"][:3]
    cost: dict[str, Any] = body["extensions"]["cost"]
    return {"data": body["data"], "requests": cost["requests"], "waves": cost["waves"]}


def test_caller_check__me__one_batch_get_item(api: Api, big: BigTenant) -> None:
    cost = cost_as(api, big.employees[0], "{ me { email } }")
    # Floor: the caller's GetItem. The check's organisation shares its call.
    assert cost["requests"] == {"BatchGetItem": 1}
    assert cost["waves"] == 1


def test_caller_check__q1_directory__floor_plus_one(api: Api, big: BigTenant) -> None:
    cost = cost_as(api, big.admin, Q1)
    floor = {"Query": 1 + DEPARTMENTS}  # AP5, then AP7 per department
    assert cost["requests"] == {**floor, "BatchGetItem": 1}
    assert cost["waves"] == 2


def test_caller_check__q2_pipeline__floor_plus_one(api: Api, big: BigTenant) -> None:
    cost = cost_as(api, big.admin, Q2)
    jobs = cost["data"]["organization"]["jobPostings"]["edges"]
    applications = [a["node"] for j in jobs for a in j["node"]["applications"]["edges"]]
    assert len(jobs) == 20 and applications
    distinct_employees = len({a["employee"]["email"] for a in applications})
    # AP8, AP10 per job; the applicants by id; their departments by id (more than one: a batch).
    floor = {"Query": 1 + len(jobs), "BatchGetItem": math.ceil(distinct_employees / 100) + 1}
    assert cost["requests"] == {**floor, "BatchGetItem": floor["BatchGetItem"] + 1}
    assert cost["waves"] == 4


def hold_queries(seconds: float) -> SendHook:
    """An ``on_send`` hook holding every Query ``seconds`` before it is sent (no read timeout applies)."""

    async def hold(request: Request) -> None:
        if faults.operation_of(request) == "Query":
            await asyncio.sleep(seconds)

    return hold


def test_caller_check__q3_profile__applications_read_beside_the_caller(
    api: Api, big: BigTenant, dynamo: AsyncDynamo
) -> None:
    """``me``'s id is the caller's, known before its read, so its applications' Query (AP11)
    goes out with it (fields.prefetch): two waves where the floor takes three. Held 0.2 s,
    the Query answers after the department is asked for, so the department's GetItem and the
    job postings' BatchGetItem are two calls of the second wave; unheld they may be one."""
    employee = big.employees[0]
    with faults.on_send(dynamo, hold_queries(0.2)), calls.listening() as log:
        cost = cost_as(api, employee, Q3)
    assert len(cost["data"]["me"]["applications"]["edges"]) == APPLICATIONS_EACH
    assert cost["data"]["me"]["department"]["manager"] is None  # bulk departments have none
    # Floor: GetItem me | GetItem department, AP11 | BatchGetItem of the 3 jobs. The caller's
    # read carries the organisation's too, so it is a BatchGetItem: 4 calls, as the floor.
    assert cost["requests"] == {"BatchGetItem": 2, "GetItem": 1, "Query": 1}
    assert cost["waves"] == 2
    assert [sorted(call.operation for call in wave) for wave in log.waves()] == [
        ["BatchGetItem", "Query"],
        ["BatchGetItem", "GetItem"],
    ]

    unheld = cost_as(api, employee, Q3)
    assert unheld["data"] == cost["data"]
    assert unheld["waves"] == 2
    assert unheld["requests"]["Query"] == 1
    assert sum(unheld["requests"].values()) in (3, 4)  # the second wave's reads in one batch or two


def test_q3_profile_with_a_manager__three_waves_however_its_two_chains_interleave(
    api: Api, demo: Demo, dynamo: AsyncDynamo
) -> None:
    """Q3 has two chains: the caller's read, then the department, then its manager; and the
    applications (read beside the caller), then their job postings. Held 1 s, the
    applications' Query ends after the manager is read, so the job postings start after the
    manager's GetItem ended: timings alone would count four rounds. The loads' depths count
    three, as the floor's."""
    with faults.on_send(dynamo, hold_queries(1.0)), calls.listening() as log:
        cost = cost_as(api, demo.person("dave@acme.co"), Q3)

    assert cost["data"]["me"]["department"]["manager"] == {"email": "bob@acme.co"}
    assert cost["requests"] == {"BatchGetItem": 2, "GetItem": 2, "Query": 1}
    assert cost["waves"] == 3
    assert [sorted(call.operation for call in wave) for wave in log.waves()] == [
        ["BatchGetItem", "Query"],
        ["BatchGetItem", "GetItem"],
        ["GetItem"],
    ]
    timed = CallLog()
    for call in log.snapshot():
        timed.add(replace(call, depth=None))
    assert len(timed.waves()) == 4  # what the timings alone would say


def test_me_applications_after_a_cursor__read_after_the_caller(api: Api, demo: Demo) -> None:
    """Only a first page is read ahead: a page after a cursor needs the cursor checked, so its
    Query goes out a wave after the caller's read, as under any other parent."""
    dave = demo.person("dave@acme.co")
    page = "query($after: String) { me { applications(first: 1, after: $after) { pageInfo { endCursor } } } }"
    with calls.listening() as log:
        first = cost_as(api, dave, page)
    assert [sorted(call.operation for call in wave) for wave in log.waves()] == [["BatchGetItem", "Query"]]
    cursor = first["data"]["me"]["applications"]["pageInfo"]["endCursor"]
    assert cursor is not None
    with calls.listening() as log:
        cost_as(api, dave, page, {"after": cursor})
    assert [sorted(call.operation for call in wave) for wave in log.waves()] == [["BatchGetItem"], ["Query"]]


def test_read_ahead_that_fails__fails_its_own_field_only(api: Api, demo: Demo, dynamo: AsyncDynamo) -> None:
    """``me``'s applications, read ahead, share the first wave's list batch with the
    organisation's departments. Their Query refused (a non-retryable 400), only
    ``me.applications`` fails, as it would read a wave later: the departments keep their page,
    and the failed page is not read a second time."""

    async def refuse_applications(request: Request) -> Response | None:
        if faults.operation_of(request) == "Query" and b"GSI1" in request.body:
            body = {"__type": "com.amazon.coral.validate#ValidationException", "message": "injected"}
            return Response(400, json.dumps(body).encode())
        return None

    query = (
        "{ me { email applications(first: 2) { edges { node { status } } } } "
        "organization { departments(first: 1) { edges { node { name } } } } }"
    )
    with faults.on_send(dynamo, refuse_applications), calls.listening() as log:
        body = api.as_(demo.person("dave@acme.co")).query(query)

    assert [error["path"] for error in body["errors"]] == [["me", "applications"]]
    assert body["data"]["me"] == {"email": "dave@acme.co", "applications": None}
    assert len(body["data"]["organization"]["departments"]["edges"]) == 1
    assert [call.operation for call in log.snapshot()].count("Query") == 2  # applications once, departments once


def test_read_ahead_with_a_first_out_of_range__reads_nothing(api: Api, demo: Demo) -> None:
    """A ``first`` the field refuses is not read ahead: the field's own BAD_USER_INPUT, no Query."""
    with calls.listening() as log:
        body = api.as_(demo.person("dave@acme.co")).query("{ me { applications(first: 5000) { edges { cursor } } } }")
    assert [error["extensions"]["code"] for error in body["errors"]] == ["BAD_USER_INPUT"]
    assert [call.operation for call in log.snapshot()] == ["BatchGetItem"]


def test_read_ahead_for_a_field_that_never_runs__finished_inside_the_request(
    api: Api, demo: Demo, dynamo: AsyncDynamo
) -> None:
    """The caller's read fails (and the caller check that shares it refuses the request), so
    ``me``'s applications never resolve; the Query started beside it (held 0.3 s) still ends
    before the response does, and is counted in it: no call of a request outlives it."""
    hold = hold_queries(0.3)

    async def fail_batches(request: Request) -> Response | None:
        if faults.operation_of(request) == "BatchGetItem":
            body = {"__type": "com.amazon.coral.validate#ValidationException", "message": "injected"}
            return Response(400, json.dumps(body).encode())
        await hold(request)
        return None

    with faults.on_send(dynamo, fail_batches), calls.listening() as log:
        body = api.as_(demo.person("dave@acme.co")).query(
            "{ me { applications(first: 2) { edges { node { status } } } } }"
        )
        finished = [(call.operation, call.finished is not None) for call in log.snapshot()]
    assert body["errors"]
    assert ("Query", True) in finished
    assert all(done for _operation, done in finished)


def test_list_under_a_two_level_preload__one_wave_deeper_than_the_preload(api: Api, demo: Demo) -> None:
    """Job postings, their departments and the departments' managers are loaded page-wide,
    level by level (types/relations.py); each manager's applications list comes after all."""
    query = (
        "{ organization { jobPostings(first: 20) { edges { node { department { manager { "
        "applications(first: 3) { edges { node { status } } } } } } } } } }"
    )
    cost = cost_as(api, demo.person("alice@acme.co"), query)

    managers = {
        edge["node"]["department"]["manager"] is not None
        for edge in cost["data"]["organization"]["jobPostings"]["edges"]
    }
    assert managers == {True}
    # The caller check beside AP6, the departments, the managers, then AP10 per manager.
    assert cost["requests"]["BatchGetItem"] == 3
    assert cost["waves"] == 4


def test_caller_check__q4_hundred_nodes__floor_plus_one(api: Api, big: BigTenant) -> None:
    nodes = " ".join(
        f'n{i}: node(id: "{ids.encode("Employee", e.emp_id)}") {{ ... on Employee {{ email }} }}'
        for i, e in enumerate(big.employees[:100])
    )
    with calls.listening() as log:
        cost = cost_as(api, big.admin, f"{{ {nodes} }}")
    assert len(cost["data"]) == 100
    # Floor: one BatchGetItem of 100 keys; the check's two keys make 102, two calls, one wave.
    assert cost["requests"] == {"BatchGetItem": 2}
    assert cost["waves"] == 1
    # Of even size, side by side: the wave is as slow as its larger call (Table.batch_get).
    sizes = [len(asked["Keys"]) for call in log.calls for asked in call.params["RequestItems"].values()]
    assert sorted(sizes) == [51, 51]


def test_nodes_by_id__relations_beneath__one_wave_per_level(api: Api, demo: Demo) -> None:
    """Aliased ``node`` fields share one batch, and what they select beneath is read a round
    trip deeper each level, as under any other field: three waves, three requests. (Under
    plans they are fields declared by their loads, whose wait must carry the batch's depth to what is
    loaded beneath; graphql-core's resolvers give the same counts.)"""
    alice = demo.person("alice@acme.co")
    departments = cost_as(api, alice, "{ organization { departments { edges { node { manager { email } } } } } }")
    edges = departments["data"]["organization"]["departments"]["edges"]
    managers = {edge["node"]["manager"]["email"] for edge in edges if edge["node"]["manager"]}
    # Not the managers themselves, nor the caller (the check reads her): each level is a read.
    acme = [
        p for email, p in demo.people.items() if email.endswith("@acme.co") and email not in managers | {alice.email}
    ]
    nodes = " ".join(
        f'n{i}: node(id: "{ids.encode("Employee", e.emp_id)}") {{ ... on Employee {{ email department {{ name '
        "manager { email department { id } } } } }"
        for i, e in enumerate(acme)
    )
    cost = cost_as(api, alice, f"{{ {nodes} }}")
    assert len(cost["data"]) == len(acme) > 3
    managed = [node for node in cost["data"].values() if node["department"] and node["department"]["manager"]]
    assert managed and all(node["department"]["manager"]["department"]["id"] for node in managed)
    # The check with the people; their departments; the managers. The managers' departments
    # were read in the second wave: nothing is read a fourth time.
    assert cost["waves"] == 3
    assert sum(cost["requests"].values()) == 3


def test_caller_check__mutation__one_call_before_the_write(api: Api, big: BigTenant) -> None:
    employee = big.employees[-1]
    with calls.listening() as log:
        body = api.as_(big.admin).query(
            "mutation($i: UpdateEmployeeInput!) { updateEmployee(input: $i) { employee { firstName } } }",
            {"i": {"id": ids.encode("Employee", employee.emp_id), "expectedVersion": 1, "firstName": "Renamed"}},
        )
    assert "errors" not in body, body["errors"]
    waves = [dict(Counter(call.operation for call in wave)) for wave in log.waves()]
    # The check (one call, a wave of its own: nothing is written before it passes), then the
    # mutation's own calls, as before.
    assert waves[0] == {"BatchGetItem": 1}
    assert all("Query" not in wave for wave in waves)

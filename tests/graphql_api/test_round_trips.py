"""Round trips: one wave of DynamoDB calls per nesting level, exact counts, with and without jitter.

The tenant is 20 departments x 50 employees x 3 applications over 150 jobs. Counts are read
twice: from the response's ``extensions.cost`` and from every call any client made meanwhile
(``datastore.calls.listening``), whose waves are also checked level by level.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from datastore import calls, organizations
from datastore.entities import Employee, Plan
from datastore.scope import PlatformScope
from datastore.seed import Bulk
from datastore.store import Datastore
from datastore.table import Table
from graphql_api.app import create_app
from graphql_api.config import ApiSettings
from tests.conftest import unique_domain
from tests.graphql_api.conftest import Api
from tests.graphql_api.live import serving, with_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEPARTMENTS, EMPLOYEES_EACH, APPLICATIONS_EACH, JOBS = 20, 50, 3, 150

NESTED = (
    "{ organization { departments(first: 20) { edges { node { employees(first: 50) { edges { node { "
    "applications(first: 10) { edges { node { jobPosting { title } } } } } } } } } } } }"
)


@pytest.fixture(scope="module")
def api(client: DynamoDBClient, table_name: str, api_settings: ApiSettings) -> Iterator[Api]:
    """A server whose query-cost limit admits the 20 x 50 x 10 nested query (cost ~11k)."""
    # A deadline for a loaded machine: this test counts round trips, not seconds.
    settings = with_settings(api_settings, max_cost=100_000, request_timeout_seconds=120.0)
    with serving(create_app(Datastore(client, table_name), settings)) as http:
        yield Api(http, settings)


@dataclass(frozen=True)
class BigTenant:
    admin: Employee
    distinct_jobs: int


@pytest.fixture(scope="module")
def big(client: DynamoDBClient, table_name: str) -> BigTenant:
    org, admin = organizations.create_organization(
        Table(client, table_name, PlatformScope()),
        name="Round Trips",
        plan=Plan.ENTERPRISE,
        email_domains=[domain := unique_domain()],
        admin_email=f"admin@{domain}",
        admin_first_name="Ada",
        admin_last_name="Admin",
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
    bulk.write(client, table_name)
    assert time.monotonic() - started < 30
    return BigTenant(admin, len({a.job_id for a in bulk.applications}))


@pytest.fixture
def jitter(client: DynamoDBClient) -> Iterator[None]:
    """Every DynamoDB call waits a random 0-20 ms before it is sent."""

    def delay(**_: Any) -> None:
        time.sleep(random.uniform(0, 0.020))

    client.meta.events.register("before-call.dynamodb", delay, unique_id="test-jitter")
    try:
        yield
    finally:
        client.meta.events.unregister("before-call.dynamodb", unique_id="test-jitter")


def expected_levels(big: BigTenant) -> list[dict[str, int]]:
    return [
        # The caller check (AP13, reused by `organization`, and the caller's GetItem) runs
        # alongside AP5 (departments), which needs only the organisation's id.
        {"GetItem": 1, "Query": 2},
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
    assert cost["itemsRead"] == 3 + DEPARTMENTS + employees * (1 + APPLICATIONS_EACH) + big.distinct_jobs


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
    from graphql_api import ids

    my_id = ids.encode("Employee", big.admin.emp_id)
    body = api.as_(big.admin).query(
        "query($id: ID!) { me { email } again: me { firstName } "
        "byId: employee(id: $id) { lastName } asNode: node(id: $id) { id } }",
        {"id": my_id},
    )
    assert "errors" not in body, body["errors"]
    assert body["data"]["asNode"] == {"id": my_id}
    # The caller check reads the caller once; every later ask is served by the loader.
    assert body["extensions"]["cost"]["requests"] == {"GetItem": 1, "Query": 1}


def test_same_entity_at_two_depths__read_once_per_level(api: Api, big: BigTenant) -> None:
    """Fifty employees of one department ask for that department: one key, one GetItem."""
    body = api.as_(big.admin).query(
        "{ organization { departments(first: 1) { edges { node { employees(first: 50) { edges { node { "
        "department { name } } } } } } } } }"
    )
    assert "errors" not in body, body["errors"]
    employees = body["data"]["organization"]["departments"]["edges"][0]["node"]["employees"]["edges"]
    assert len(employees) == EMPLOYEES_EACH
    assert body["extensions"]["cost"]["requests"] == {"GetItem": 2, "Query": 3}
    assert body["extensions"]["cost"]["waves"] == 3

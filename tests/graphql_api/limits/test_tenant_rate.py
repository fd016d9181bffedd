"""Fair tenants: each organisation's token bucket of cost units, over HTTP and on its own.

The HTTP tests run servers of their own with small buckets: one refilling at 1 unit/s (so a
test's own few seconds change nothing that matters), one at 200 units/s for refill. The
bucket's arithmetic is checked exactly with a clock the test moves by hand.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from graphql import parse

from datastore.aws.calls import CallLog
from datastore.table.pagination import PageRequest
from datastore.tenants import departments
from graphql_api.app import create_app
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.execution.analysis import root_fields
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.execution.query_cost import query_cost
from graphql_api.limits.tenant_rate import WRITE_WEIGHT, TenantBuckets
from graphql_api.schema.executable import build_schema
from graphql_api.settings.api import ApiSettings, ConfigError
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant, TenantFactory
from tests.graphql_api.fixtures import TEST_SECRET
from tests.graphql_api.live import serving, with_settings

# Costly to admit (every department's employees could come back), cheap to run on an empty
# organisation: one Query that finds no department.
DIRECTORY = (
    "{ organization { departments(first: 100) { edges { node { name "
    "employees(first: 20) { edges { node { email } } } } } } } }"
)
DIRECTORY_COST = query_cost(graphql_schema(build_schema()), parse(DIRECTORY))
# About 100 units: refused at 200 units/s for half a second at most.
SMALL = "{ organization { departments(first: 79) { edges { node { name } } } } }"
SMALL_COST = query_cost(graphql_schema(build_schema()), parse(SMALL))
CREATE = "mutation($i: CreateDepartmentInput!) { createDepartment(input: $i) { department { id } } }"
CREATE_COST = query_cost(graphql_schema(build_schema()), parse(CREATE))
PLATFORM_QUERY = "{ organizations(first: 100) { edges { node { name } } } }"
GRAPHQL_RESPONSE = "application/graphql-response+json"


class HandClock:
    """A clock the test moves: a real function the registry calls, not a mock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- the bucket on its own ---------------------------------------------------------------


def test_bucket__at_the_burst__admitted__one_unit_past__refused_with_the_wait() -> None:
    clock = HandClock()
    buckets = TenantBuckets(100, 500, clock=clock)
    assert buckets.charge("acme", 500).admitted
    refused = buckets.charge("acme", 1)
    assert not refused.admitted
    assert refused.retry_after == pytest.approx(0.01)


def test_bucket__refused__takes_nothing_and_refills_at_the_rate() -> None:
    clock = HandClock()
    buckets = TenantBuckets(100, 500, clock=clock)
    assert buckets.charge("acme", 400).admitted
    refused = buckets.charge("acme", 300)  # 100 left: 200 short, at 100 a second
    assert refused.retry_after == pytest.approx(2.0)
    clock.now += 1.999
    assert not buckets.charge("acme", 300).admitted
    clock.now += 0.001
    assert buckets.charge("acme", 300).admitted
    assert not buckets.charge("acme", 1).admitted


def test_bucket__idle__refills_to_the_burst_only() -> None:
    clock = HandClock()
    buckets = TenantBuckets(100, 500, clock=clock)
    assert buckets.charge("acme", 500).admitted
    clock.now += 3600
    assert buckets.charge("acme", 500).admitted
    assert not buckets.charge("acme", 1).admitted


def test_bucket__more_than_the_burst__refused_with_the_wait_for_a_full_bucket() -> None:
    clock = HandClock()
    buckets = TenantBuckets(100, 500, clock=clock)
    assert buckets.charge("acme", 200).admitted
    refused = buckets.charge("acme", 10_000)
    assert not refused.admitted
    assert refused.retry_after == pytest.approx(2.0)


def test_bucket__tenants__independent() -> None:
    clock = HandClock()
    buckets = TenantBuckets(100, 500, clock=clock)
    assert buckets.charge("acme", 500).admitted
    assert not buckets.charge("acme", 1).admitted
    assert buckets.charge("globex", 500).admitted


def test_bucket__past_max_buckets__least_recent_evicted_and_full_again() -> None:
    clock = HandClock()
    buckets = TenantBuckets(100, 500, max_buckets=2, clock=clock)
    assert buckets.charge("a", 500).admitted
    assert buckets.charge("b", 500).admitted
    assert not buckets.charge("a", 1).admitted  # a is now the most recent
    assert buckets.charge("c", 1).admitted  # evicts b
    assert len(buckets) == 2
    assert buckets.charge("b", 500).admitted  # full again; evicts a
    assert buckets.charge("a", 500).admitted


@pytest.mark.parametrize(
    ("document", "fields"),
    [
        ('mutation { a: createDepartment(input: {name: "A"}) { department { id } } }', 1),
        ("mutation { a: m(x: 1) { id } b: m(x: 2) { id } }", 2),
        ("mutation { ...F ...F ... on Mutation { c: m } } fragment F on Mutation { a: m b: m }", 3),
        ("mutation One { a: m } mutation Two { a: m b: m }", 1),
        ("mutation { a: m b: m @skip(if: true) c: m @include(if: false) }", 1),
        ("mutation($s: Boolean!) { a: m b: m @skip(if: $s) ... @include(if: $s) { c: m } }", 2),
        ("mutation($s: Boolean = true) { a: m ...F @skip(if: $s) } fragment F on Mutation { b: m }", 1),
    ],
    ids=["one", "aliases", "fragments", "named-operation", "skip-literal", "skip-variable", "skip-default"],
)
def test_root_fields__aliases_fragments_and_skip__each_field_that_runs_counted(document: str, fields: int) -> None:
    schema = graphql_schema(build_schema([]))
    variables = {"s": True} if "Boolean!" in document else {}  # else the default applies
    assert root_fields(schema, parse(document), "One" if "One" in document else None, variables) == fields


def test_settings__burst_below_max_query_cost__refused() -> None:
    env = {"HR_ENV": "test", "JWT_SECRET": TEST_SECRET, "MAX_QUERY_COST": "5000", "TENANT_COST_BURST": "4999"}
    with pytest.raises(ConfigError, match="TENANT_COST_BURST"):
        ApiSettings.from_env(env)
    assert ApiSettings.from_env({**env, "TENANT_COST_PER_SECOND": "0"}).tenant_cost_per_second == 0


def test_settings__defaults__admit_the_largest_query_and_the_bench_q1_at_ten_a_second() -> None:
    settings = ApiSettings.from_env({"HR_ENV": "test", "JWT_SECRET": TEST_SECRET})
    assert settings.tenant_cost_burst >= settings.max_cost
    assert settings.tenant_cost_per_second >= 10 * 2547  # Q1's cost (README "Query cost")


# --- over HTTP -------------------------------------------------------------------------


def settings_with(api_settings: ApiSettings, per_second: int, burst: int) -> ApiSettings:
    return with_settings(api_settings, tenant_cost_per_second=per_second, tenant_cost_burst=burst)


@pytest.fixture(scope="module")
def slow_refill(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings) -> Iterator[httpx.Client]:
    """Buckets of two DIRECTORY queries, refilling at 1 unit a second."""
    settings = settings_with(api_settings, 1, 2 * DIRECTORY_COST)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield http


@pytest.fixture(scope="module")
def fast_refill(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings) -> Iterator[httpx.Client]:
    """Buckets of one SMALL query, refilling at 200 units a second."""
    settings = settings_with(api_settings, 200, SMALL_COST)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield http


def post(
    http: httpx.Client, token: str, query: str, variables: dict[str, Any] | None = None, accept: str | None = None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if accept is not None:
        headers["Accept"] = accept
    return http.post("/graphql", json={"query": query, "variables": variables or {}}, headers=headers)


def admin_token(api_settings: ApiSettings, tenant: Tenant) -> str:
    admin = tenant.admin
    return issue_token(api_settings, subject=admin.emp_id, org_id=admin.org_id, role=admin.role.value)


def assert_admitted(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    assert "errors" not in response.json(), response.json()


def rate_limited(response: httpx.Response) -> float:
    """The refusal's retryAfter, after checking its shape: it shows the charge it could not pay,
    the query's cost against the limit, and the bucket, which holds less than the charge."""
    body = response.json()
    assert "data" not in body, body
    [error] = body["errors"]
    extensions = error["extensions"]
    assert extensions["code"] == "RATE_LIMITED"
    assert extensions["retryable"] is True
    retry_after = extensions["retryAfter"]
    assert isinstance(retry_after, float | int) and retry_after > 0
    assert response.status_code == 429
    assert response.headers["Retry-After"] == str(max(1, math.ceil(retry_after)))
    assert set(extensions) == {"code", "retryable", "retryAfter", "queryCost", "maxQueryCost", "charge", "bucket"}
    assert extensions["maxQueryCost"] == 5000
    assert extensions["charge"] >= extensions["queryCost"]
    assert set(extensions["bucket"]) == {"remaining", "capacity", "refillPerSecond"}
    assert 0 <= extensions["bucket"]["remaining"] < extensions["charge"]
    return float(retry_after)


def bucket_of(response: httpx.Response) -> dict[str, Any]:
    """``extensions.cost`` less its DynamoDB figures: the query cost, the charge and the bucket."""
    assert_admitted(response)
    cost: dict[str, Any] = response.json()["extensions"]["cost"]
    return {name: cost[name] for name in ("queryCost", "maxQueryCost", "charge", "bucket") if name in cost}


def test_tenant_rate__at_the_burst__admitted__one_past__refused_before_any_dynamodb_call(
    slow_refill: httpx.Client, api_settings: ApiSettings, tenant: Tenant, call_log: CallLog
) -> None:
    token = admin_token(api_settings, tenant)
    started = time.monotonic()
    assert_admitted(post(slow_refill, token, DIRECTORY))
    assert_admitted(post(slow_refill, token, DIRECTORY))
    before = call_log.count()
    refused = post(slow_refill, token, DIRECTORY, accept=GRAPHQL_RESPONSE)
    assert call_log.count() == before, "a rate-limited request must not reach DynamoDB"
    retry_after = rate_limited(refused)
    # Empty after two, refilling at 1 unit/s: the wait is the query's cost less the seconds gone.
    elapsed = time.monotonic() - started
    assert DIRECTORY_COST - elapsed - 0.01 <= retry_after <= DIRECTORY_COST


def test_tenant_rate__every_response__shows_cost_charge_and_bucket(
    slow_refill: httpx.Client, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token = admin_token(api_settings, tenant)
    burst = 2 * DIRECTORY_COST
    started = time.monotonic()
    first = bucket_of(post(slow_refill, token, DIRECTORY))
    # A new organisation's bucket starts full, and refill never takes it past its capacity.
    assert first == {
        "queryCost": DIRECTORY_COST,
        "maxQueryCost": 5000,
        "charge": DIRECTORY_COST,
        "bucket": {"remaining": burst - DIRECTORY_COST, "capacity": burst, "refillPerSecond": 1},
    }
    second = bucket_of(post(slow_refill, token, SMALL))
    elapsed = time.monotonic() - started
    assert (second["queryCost"], second["charge"]) == (SMALL_COST, SMALL_COST)
    # 1 unit a second refilled since the first: rounded down, at most the seconds gone.
    left = burst - DIRECTORY_COST - SMALL_COST
    assert left <= second["bucket"]["remaining"] <= left + elapsed
    refused = post(slow_refill, token, DIRECTORY).json()["errors"][0]["extensions"]
    assert (refused["queryCost"], refused["charge"]) == (DIRECTORY_COST, DIRECTORY_COST)
    assert second["bucket"]["remaining"] <= refused["bucket"]["remaining"] <= left + time.monotonic() - started


def test_tenant_rate__application_json__also_429_with_retry_after(
    slow_refill: httpx.Client, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token = admin_token(api_settings, tenant)
    assert_admitted(post(slow_refill, token, DIRECTORY))
    assert_admitted(post(slow_refill, token, DIRECTORY))
    response = post(slow_refill, token, DIRECTORY, accept="application/json")
    assert response.headers["content-type"].startswith("application/json")
    rate_limited(response)


def test_tenant_rate__one_tenant_exhausted__another_unaffected(
    slow_refill: httpx.Client, api_settings: ApiSettings, make_tenant: TenantFactory
) -> None:
    noisy, quiet = admin_token(api_settings, make_tenant()), admin_token(api_settings, make_tenant())
    assert_admitted(post(slow_refill, noisy, DIRECTORY))
    assert_admitted(post(slow_refill, noisy, DIRECTORY))
    rate_limited(post(slow_refill, noisy, DIRECTORY))
    assert_admitted(post(slow_refill, quiet, DIRECTORY))
    assert_admitted(post(slow_refill, quiet, DIRECTORY))
    rate_limited(post(slow_refill, noisy, DIRECTORY))


def test_tenant_rate__refused__takes_nothing_from_the_bucket(
    slow_refill: httpx.Client, api_settings: ApiSettings, tenant: Tenant
) -> None:
    """A cheap query still fits once the costly one is refused: the refusal charged nothing."""
    token = admin_token(api_settings, tenant)
    assert_admitted(post(slow_refill, token, DIRECTORY))
    assert_admitted(post(slow_refill, token, SMALL))
    rate_limited(post(slow_refill, token, DIRECTORY))  # needs DIRECTORY_COST, has less
    assert_admitted(post(slow_refill, token, "{ me { email } }"))


def test_tenant_rate__mutation__charged_its_cost_plus_the_write_weight(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tenant: Tenant, call_log: CallLog
) -> None:
    charge = CREATE_COST + WRITE_WEIGHT
    settings = settings_with(api_settings, 1, charge)  # exactly one write
    token = admin_token(api_settings, tenant)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        started = time.monotonic()
        paid = bucket_of(post(http, token, CREATE, {"i": {"name": "Paid for"}}))
        assert (paid["queryCost"], paid["charge"], paid["bucket"]["remaining"]) == (CREATE_COST, charge, 0)
        before = call_log.count()
        retry_after = rate_limited(post(http, token, CREATE, {"i": {"name": "Not paid for"}}))
        assert call_log.count() == before, "a rate-limited mutation must not reach DynamoDB"
        elapsed = time.monotonic() - started
    # The wait is the whole charge (cost and write weight) less the refill since the first.
    assert charge - elapsed - 0.01 <= retry_after <= charge
    names = [d.name for d in run(departments.list_departments(tenant.table, PageRequest())).items]
    assert names == ["Paid for"]


SKIPPED_WRITE = (
    "mutation($i: CreateDepartmentInput!, $s: Boolean!) { a: createDepartment(input: $i) { department { id } } "
    "b: createDepartment(input: $i) @skip(if: $s) { department { id } } }"
)


def test_tenant_rate__mutation_field_under_skip__not_charged(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tenant: Tenant
) -> None:
    charge = CREATE_COST + WRITE_WEIGHT
    settings = settings_with(api_settings, 1, charge)  # exactly one write, and the skipped one is free
    token = admin_token(api_settings, tenant)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        assert_admitted(post(http, token, SKIPPED_WRITE, {"i": {"name": "Only one"}, "s": True}))
        rate_limited(post(http, token, CREATE, {"i": {"name": "Not paid for"}}))
    names = [d.name for d in run(departments.list_departments(tenant.table, PageRequest())).items]
    assert names == ["Only one"]


def test_tenant_rate__platform_operator__not_tenant_bounded(
    slow_refill: httpx.Client, api_settings: ApiSettings
) -> None:
    token = issue_token(api_settings, subject="operator", org_id=None, role=PLATFORM_ROLE)
    platform_cost = query_cost(graphql_schema(build_schema()), parse(PLATFORM_QUERY))
    for _ in range(2 * DIRECTORY_COST // platform_cost + 2):
        # Its cost is shown; it draws on no bucket, so neither a charge nor a bucket is.
        assert bucket_of(post(slow_refill, token, PLATFORM_QUERY)) == {"queryCost": platform_cost, "maxQueryCost": 5000}


def test_tenant_rate__after_retry_after__admitted_again(
    fast_refill: httpx.Client, api_settings: ApiSettings, tenant: Tenant
) -> None:
    token = admin_token(api_settings, tenant)
    retry_after = None
    for _ in range(10):  # refused unless more than half a second passed between two requests
        response = post(fast_refill, token, SMALL)
        if response.status_code == 429:
            retry_after = rate_limited(response)
            break
        assert_admitted(response)
    assert retry_after is not None, "ten SMALL queries in a row never emptied a one-query bucket"
    assert retry_after <= SMALL_COST / 200 + 0.001
    time.sleep(retry_after)
    assert_admitted(post(fast_refill, token, SMALL))

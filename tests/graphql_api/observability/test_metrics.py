"""Prometheus metrics of the in-process server, scraped over HTTP from /metrics: what a request
adds, errors once per request per code, status codes, RATE_LIMITED by tenant, and operation
names labelled only once the server knows them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from datastore.dev.local import free_port
from datastore.values import ids
from graphql_api.app import create_app
from graphql_api.observability.labels import OTHER
from graphql_api.observability.metrics import Metrics, serve_metrics
from graphql_api.observability.record import Outcome
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant, TenantFactory
from tests.graphql_api.fixtures import Api, Demo, GraphQLClient
from tests.graphql_api.live import serving, with_settings
from tests.graphql_api.observability.logs import captured_lines
from tests.graphql_api.observability.test_access_log import docs_directory_query, post


@pytest.fixture(scope="module")
def metrics_url() -> Iterator[str]:
    """This process's /metrics, served as ``server.py run`` serves it (one process)."""
    port = free_port()
    server = serve_metrics("127.0.0.1", port)
    yield f"http://127.0.0.1:{port}/metrics"
    server.shutdown()
    server.server_close()


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample /metrics serves, by name and labels."""
    text = httpx.get(url, timeout=10).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return scraped.get((name, frozenset(labels.items())), 0.0)


def ask(client: GraphQLClient, query: str, request_id: str) -> httpx.Response:
    """``query`` over HTTP, once its access line (and so its metrics) is written."""
    with captured_lines() as captured:
        response = post(client, query, request_id)
        captured.wait_for_access_line(request_id)
    return response


def unique(prefix: str) -> str:
    return f"{prefix}{ids.new_id()}"


def test_metrics__not_on_the_api_port(anonymous: GraphQLClient) -> None:
    assert anonymous.http.get("/metrics").status_code == 404


def test_metrics__directory_query__status_errors_once_per_code_and_tenant_cost(
    api: Api, demo: Demo, metrics_url: str
) -> None:
    dave = demo.person("dave@acme.co")
    tenant = {"tenant": dave.org_id}
    name = unique("Directory")  # one organisation's name: counted as "other"
    before = scrape(metrics_url)

    request_id = unique("metrics-directory-")
    body = ask(api.as_(dave), f"query {name}\n" + docs_directory_query(), request_id).json()
    after = scrape(metrics_url)

    forbidden = [error for error in body["errors"] if error["extensions"]["code"] == "FORBIDDEN"]
    assert len(forbidden) > 1  # nine fields refused to an employee, one request
    requests = {"route": "/graphql", "operation": OTHER, "status": "200"}
    assert value(after, "hr_requests_total", **requests) == value(before, "hr_requests_total", **requests) + 1
    errors = ("hr_requests_with_error_total", {"code": "FORBIDDEN"})
    assert value(after, errors[0], **errors[1]) == value(before, errors[0], **errors[1]) + 1
    cost = body["extensions"]["cost"]
    assert value(after, "hr_dynamodb_calls_total", **tenant) == value(
        before, "hr_dynamodb_calls_total", **tenant
    ) + float(cost["requestCount"])
    assert value(after, "hr_dynamodb_read_units_total", **tenant) == value(
        before, "hr_dynamodb_read_units_total", **tenant
    ) + float(cost["readCapacityUnits"])
    assert value(after, "hr_requests_in_flight") == 0
    assert not [key for key in after if key[0] == "hr_requests_total" and ("operation", name) in key[1]]


def test_metrics__status__401_counted_by_status(anonymous: GraphQLClient, metrics_url: str) -> None:
    labels = {"route": "/graphql", "operation": "none", "status": "401"}
    before = value(scrape(metrics_url), "hr_requests_total", **labels)

    response = ask(anonymous.with_token("not-a-token"), "{ me { email } }", unique("metrics-401-"))

    assert response.status_code == 401
    assert value(scrape(metrics_url), "hr_requests_total", **labels) == before + 1


def test_metrics__operation_name__labelled_once_two_organisations_ran_it(
    api: Api, demo: Demo, metrics_url: str
) -> None:
    name = unique("Team")
    query = f"query {name} {{ me {{ email }} }}"

    ask(api.as_(demo.person("dave@acme.co")), query, unique("metrics-name-1-"))
    first = scrape(metrics_url)
    ask(api.as_(demo.person("hank@globex.example")), query, unique("metrics-name-2-"))
    ask(api.as_(demo.person("dave@acme.co")), query, unique("metrics-name-3-"))
    later = scrape(metrics_url)

    labels = {"route": "/graphql", "operation": name, "status": "200"}
    assert value(first, "hr_requests_total", **labels) == 0  # one organisation vouches: not yet
    assert value(later, "hr_requests_total", **labels) == 2  # the second's request on


@pytest.fixture(scope="module")
def few_slots(new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings) -> Iterator[Api]:
    """A server that labels at most five learned operation names."""
    settings = with_settings(api_settings, metrics_max_operations=5)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield Api(http, settings)


def test_metrics__junk_names_from_one_organisation__never_labelled_nor_fill_the_slots(
    few_slots: Api, make_tenant: TenantFactory, metrics_url: str
) -> None:
    attacker, one, two = make_tenant("Junk"), make_tenant("One"), make_tenant("Two")
    junk = [unique("Junk") for _ in range(30)]  # six times the slots
    for name in junk:
        assert (
            ask(few_slots.admin_of(attacker), f"query {name} {{ me {{ email }} }}", unique("junk-")).status_code == 200
        )
    real = unique("Real")
    for tenant in (one, two):
        ask(few_slots.admin_of(tenant), f"query {real} {{ me {{ email }} }}", unique("real-"))

    scraped = scrape(metrics_url)
    operations = {dict(key[1]).get("operation") for key in scraped if key[0] == "hr_requests_total"}
    assert not operations & set(junk)
    assert value(scraped, "hr_requests_total", route="/graphql", operation=real, status="200") == 1


def test_metrics__rate_limited__counted_by_tenant_with_its_429(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tenant: Tenant, metrics_url: str
) -> None:
    settings = with_settings(api_settings, tenant_cost_per_second=1, tenant_cost_burst=api_settings.max_cost)
    query = "{ organization { departments(first: 100) { edges { node { name } } } } }"
    with serving(create_app(new_datastore(table_name), settings)) as http:
        admin = Api(http, settings).admin_of(tenant)
        before = scrape(metrics_url)
        statuses = [ask(admin, query, unique("rate-")).status_code for _ in range(60)]
        after = scrape(metrics_url)

    refused = statuses.count(429)
    assert refused > 0, statuses
    by_tenant = ("hr_rate_limited_requests_total", {"tenant": tenant.org_id})
    assert value(after, by_tenant[0], **by_tenant[1]) == value(before, by_tenant[0], **by_tenant[1]) + refused
    code = ("hr_requests_with_error_total", {"code": "RATE_LIMITED"})
    assert value(after, code[0], **code[1]) == value(before, code[0], **code[1]) + refused
    status = ("hr_requests_total", {"route": "/graphql", "operation": "anonymous", "status": "429"})
    assert value(after, status[0], **status[1]) == value(before, status[0], **status[1]) + refused


def test_metrics__trusted_documents__their_names_labelled_at_once_from_one_organisation(
    new_datastore: DatastoreFactory,
    table_name: str,
    api_settings: ApiSettings,
    tenant: Tenant,
    tmp_path: Path,
    metrics_url: str,
) -> None:
    name = unique("Trusted")
    document = f"query {name} {{ me {{ email }} }}"
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"doc-1": document}))
    settings = with_settings(api_settings, trusted_documents=str(manifest))
    with serving(create_app(new_datastore(table_name), settings)) as http:
        assert ask(Api(http, settings).admin_of(tenant), document, unique("trusted-")).status_code == 200

    assert value(scrape(metrics_url), "hr_requests_total", route="/graphql", operation=name, status="200") == 1


# --- labels, without a server ------------------------------------------------------------


def outcome(*, operations: tuple[str | None, ...] = (), tenant: str | None = None, route: str | None = None) -> Outcome:
    ran = tuple(name for name in operations if name is not None)
    return Outcome("r", "POST", "/graphql", route, 200, 0.01, tenant, operations, {}, 0, 0.0, 0.0, ran)


def test_metrics_labels__tenants_past_the_bound__other() -> None:
    metrics = Metrics(max_operations=2, max_tenants=1)

    tenants = [metrics.labels(outcome(tenant=org)).tenant for org in ("org1", "org2", "org1")]

    assert tenants == ["org1", OTHER, "org1"]


def test_metrics_labels__configured_operations__labelled_from_the_start() -> None:
    metrics = Metrics(max_operations=0, max_tenants=1, operations=("Ping",))

    assert metrics.labels(outcome(operations=("Ping",), tenant="org1")).operation == "Ping"
    assert metrics.labels(outcome(operations=("Pong",), tenant="org1")).operation == OTHER


def test_metrics_labels__no_graphql_anonymous_batch_and_status() -> None:
    metrics = Metrics(max_operations=10, max_tenants=10)

    assert metrics.labels(outcome(route="/healthz")) == metrics.labels(outcome(route="/healthz"))
    assert metrics.labels(outcome(route="/healthz")).operation == "none"
    assert metrics.labels(outcome()).route == "unmatched"
    assert metrics.labels(outcome(operations=(None,))).operation == "anonymous"
    assert metrics.labels(outcome(operations=("A", "B"))).operation == "batch"
    assert metrics.labels(outcome()).tenant == "none"
    assert metrics.labels(outcome()).status == "200"

"""Prometheus metrics of the in-process server: what a request adds, and bounded labels."""

from __future__ import annotations

from prometheus_client import REGISTRY

from graphql_api.observability.labels import OTHER
from graphql_api.observability.metrics import Metrics
from graphql_api.observability.record import Outcome
from tests.graphql_api.fixtures import Api, Demo, GraphQLClient
from tests.graphql_api.observability.logs import captured_lines
from tests.graphql_api.observability.test_access_log import post, readme_directory_query


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_metrics__not_on_the_api_port(anonymous: GraphQLClient) -> None:
    assert anonymous.http.get("/metrics").status_code == 404


def test_metrics__directory_query__latency_errors_and_tenant_cost(api: Api, demo: Demo) -> None:
    dave = demo.person("dave@acme.co")
    tenant = {"tenant": dave.org_id}
    before = {
        "requests": sample("hr_request_duration_seconds_count", route="/graphql", operation="Directory"),
        "forbidden": sample("hr_graphql_errors_total", code="FORBIDDEN"),
        "calls": sample("hr_dynamodb_calls_total", **tenant),
        "rcu": sample("hr_dynamodb_read_units_total", **tenant),
        "wcu": sample("hr_dynamodb_write_units_total", **tenant),
    }
    query = "query Directory\n" + readme_directory_query()  # the README's query, named
    with captured_lines() as captured:
        body = post(api.as_(dave), query, "metrics-directory").json()
        captured.wait_for_access_line("metrics-directory")  # metrics are recorded with the line

    cost = body["extensions"]["cost"]
    requests = sample("hr_request_duration_seconds_count", route="/graphql", operation="Directory")
    assert requests == before["requests"] + 1
    assert sample("hr_graphql_errors_total", code="FORBIDDEN") == before["forbidden"] + len(body["errors"])
    assert sample("hr_dynamodb_calls_total", **tenant) == before["calls"] + cost["requestCount"]
    assert sample("hr_dynamodb_read_units_total", **tenant) == before["rcu"] + cost["readCapacityUnits"]
    assert sample("hr_dynamodb_write_units_total", **tenant) == before["wcu"]
    assert sample("hr_requests_in_flight") == 0


def outcome(*, operations: tuple[str | None, ...] = (), tenant: str | None = None, route: str | None = None) -> Outcome:
    return Outcome("r", "POST", "/graphql", route, 200, 0.01, tenant, operations, {}, 0, 0.0, 0.0)


def test_metrics_labels__past_the_bounds__other() -> None:
    metrics = Metrics(max_operations=2, max_tenants=1)

    operations = [metrics.labels(outcome(operations=(name,))).operation for name in ("A", "B", "C", "A")]
    tenants = [metrics.labels(outcome(tenant=org)).tenant for org in ("org1", "org2", "org1")]

    assert operations == ["A", "B", OTHER, "A"]
    assert tenants == ["org1", OTHER, "org1"]


def test_metrics_labels__no_graphql_anonymous_and_batch() -> None:
    metrics = Metrics(max_operations=10, max_tenants=10)

    assert metrics.labels(outcome(route="/healthz")) == metrics.labels(outcome(route="/healthz"))
    assert metrics.labels(outcome(route="/healthz")).operation == "none"
    assert metrics.labels(outcome()).route == "unmatched"
    assert metrics.labels(outcome(operations=(None,))).operation == "anonymous"
    assert metrics.labels(outcome(operations=("A", "B"))).operation == "batch"
    assert metrics.labels(outcome()).tenant == "none"

"""Managing webhook endpoints over GraphQL (the suite's server: HR_ENV=test, so the outbound
rules outside development apply, as the issuers' tests apply them)."""

from __future__ import annotations

import pytest

from datastore.kinds.entities import Role
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api

CREATE = """mutation C($input: CreateWebhookEndpointInput!) {
  createWebhookEndpoint(input: $input) { secret webhookEndpoint { id } } }"""
LIST = "query { organization { webhookEndpoints { id url } } }"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://hooks.example/x", "https"),
        ("https://127.0.0.1/x", "not public"),
        ("https://10.1.2.3/x", "not public"),
        ("https://169.254.169.254/latest", "not public"),
        ("https://[::1]/x", "not public"),
    ],
)
def test_create__a_url_outside_the_outbound_rules__bad_user_input_and_nothing_written(
    api: Api, tenant: Tenant, url: str, reason: str
) -> None:
    admin = api.admin_of(tenant)
    body = admin.query(CREATE, {"input": {"url": url, "eventTypes": ["employee.*"]}})
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and error["extensions"]["field"] == "input.url"
    assert reason in error["message"]
    assert admin.data(LIST)["organization"]["webhookEndpoints"] == []


def test_create__bad_event_type__bad_user_input_at_event_types(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(CREATE, {"input": {"url": "https://1.1.1.1/x", "eventTypes": ["nope.*"]}})
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and error["extensions"]["field"] == "input.eventTypes"


def test_endpoints__an_employee__forbidden(api: Api, tenant: Tenant) -> None:
    employee = api.as_(tenant.employee(role=Role.EMPLOYEE))
    body = employee.query(CREATE, {"input": {"url": "https://1.1.1.1/x", "eventTypes": ["employee.*"]}})
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    listed = employee.query(LIST)
    assert listed["errors"][0]["extensions"]["code"] == "FORBIDDEN"

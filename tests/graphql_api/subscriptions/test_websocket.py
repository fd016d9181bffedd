"""graphql-transport-ws at /graphql: who may connect, the protocol's close codes, and a first event.

Frames are sent and read one by one with a small client (ws.py), so each rule of the
protocol and each refusal is seen as the server answers it, close code and reason included.
"""

from __future__ import annotations

import httpx
from starlette.applications import Starlette

from datastore.kinds.entities import Role
from datastore.tenants import employees
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import subscribed
from tests.graphql_api.subscriptions.ws import bearer, open_socket

DIRECTORY = "subscription Directory { employeeChanged { cursor action employee { id email role } } }"


def test_token_in_connection_init__acked__an_employee_created_arrives_with_its_cursor(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    socket = open_socket(live_url)
    assert socket.init(bearer(api.token(tenant.admin))) == {"type": "connection_ack"}
    socket.subscribe("1", DIRECTORY)
    subscribed(live_app, tenant.org_id)

    hired = run(
        employees.create_employee(
            tenant.table,
            email=tenant.email("live"),
            first_name="Live",
            last_name="Wire",
            department_id=None,
            role=Role.EMPLOYEE,
        )
    )

    message = socket.next_of("1")
    assert message["type"] == "next", message
    change = message["payload"]["data"]["employeeChanged"]
    assert change["action"] == "employee.create"
    assert change["employee"]["email"] == hired.email and change["employee"]["role"] == "EMPLOYEE"
    assert change["cursor"]
    socket.close()


def test_token_in_the_handshake_header__acked(live_url: str, api: Api, tenant: Tenant) -> None:
    socket = open_socket(live_url, headers=bearer(api.token(tenant.admin)))
    assert socket.init(None) == {"type": "connection_ack"}
    socket.close()


def test_no_credential__4401(live_url: str) -> None:
    socket = open_socket(live_url)
    socket.send({"type": "connection_init", "payload": {}})
    code, reason = socket.closed_with()
    assert code == 4401 and "no credential" in reason


def test_bad_or_expired_token__4403(live_url: str, api_settings: ApiSettings, tenant: Tenant) -> None:
    expired = issue_token(
        api_settings, subject=tenant.admin.emp_id, org_id=tenant.org_id, role="admin", ttl_seconds=-60
    )
    for token, why in (("not-a-token", "invalid token"), (expired, "expired")):
        socket = open_socket(live_url)
        socket.send({"type": "connection_init", "payload": bearer(token)})
        code, reason = socket.closed_with()
        assert code == 4403 and why in reason, (token, reason)


def test_platform_operator__4403(live_url: str, api_settings: ApiSettings) -> None:
    socket = open_socket(live_url)
    socket.send(
        {
            "type": "connection_init",
            "payload": bearer(issue_token(api_settings, subject="ops", org_id=None, role=PLATFORM_ROLE)),
        }
    )
    code, reason = socket.closed_with()
    assert code == 4403 and "operator" in reason


def test_subscribe_before_the_ack__4401(live_url: str) -> None:
    socket = open_socket(live_url)
    socket.subscribe("1", DIRECTORY)
    assert socket.closed_with()[0] == 4401


def test_second_connection_init__4429(live_url: str, api: Api, tenant: Tenant) -> None:
    socket = open_socket(live_url)
    socket.init(bearer(api.token(tenant.admin)))
    socket.send({"type": "connection_init", "payload": bearer(api.token(tenant.admin))})
    assert socket.closed_with()[0] == 4429


def test_query_or_mutation_over_the_socket__error_pointing_to_http(live_url: str, api: Api, tenant: Tenant) -> None:
    socket = open_socket(live_url)
    socket.init(bearer(api.token(tenant.admin)))
    socket.subscribe("q", "query Me { me { email } }")
    message = socket.next_of("q")
    assert message["type"] == "error"
    [error] = message["payload"]
    assert error["extensions"]["code"] == "BAD_REQUEST" and "POST /graphql" in error["message"]
    socket.close()


def test_subscription_with_an_error_in_its_document__error_message_with_its_code(
    live_url: str, api: Api, tenant: Tenant
) -> None:
    socket = open_socket(live_url)
    socket.init(bearer(api.token(tenant.admin)))
    socket.subscribe("bad", "subscription { employeeChanged { nosuchfield } }")
    message = socket.next_of("bad")
    assert message["type"] == "error"
    assert message["payload"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    socket.close()


def test_subscription_over_plain_json_post__subscriptions_not_supported(
    http: httpx.Client, api: Api, tenant: Tenant
) -> None:
    response = http.post(
        "/graphql", json={"query": DIRECTORY}, headers={"Authorization": f"Bearer {api.token(tenant.admin)}"}
    )
    [error] = response.json()["errors"]
    assert error["extensions"]["code"] == "SUBSCRIPTIONS_NOT_SUPPORTED"
    assert "WebSocket at /graphql (graphql-transport-ws)" in error["message"]
    assert "multipart/mixed;subscriptionSpec=1.0" in error["message"]

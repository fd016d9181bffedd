"""What a message may be before it is parsed (graphql_api/subscriptions/messages.py): its size,
its operation id; and the subscriptions of one connection, counted before a payload is read.

The live server here runs under uvicorn with ``ws_max_size`` at MAX_BODY_BYTES, as
graphql_api/entrypoints/serving.py starts it; the handler's own check is seen with a lower
MAX_BODY_BYTES than uvicorn's bound (a server that does not bound messages, as API Gateway's
path is checked in test_gateway.py).
"""

from __future__ import annotations

from starlette.applications import Starlette

from graphql_api.settings.api import ApiSettings
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.subscriptions.conftest import bounds, subscribed
from tests.graphql_api.subscriptions.ws import admin_socket

DIRECTORY = "subscription Directory { employeeChanged { cursor } }"


def padded(size: int) -> str:
    """A subscription document of about ``size`` bytes (a comment makes up the rest)."""
    return DIRECTORY + "\n#" + "x" * size


def test_message_over_an_http_body_s_bound__1009_before_it_is_parsed(
    live_url: str, live_app: Starlette, api: Api, tenant: Tenant
) -> None:
    with bounds(live_app, max_body_bytes=4096):  # uvicorn's bound stays at the fixture's 32 kB
        socket = admin_socket(live_url, api, tenant)
        socket.subscribe("1", padded(5000))
        code, reason = socket.closed_with()
        assert code == 1009 and "at most 4096 bytes" in reason
        assert tenant.org_id not in live_app.state.live.streams


def test_message_over_uvicorn_s_bound__1009(live_url: str, api_settings: ApiSettings, api: Api, tenant: Tenant) -> None:
    socket = admin_socket(live_url, api, tenant)
    socket.subscribe("1", padded(api_settings.max_body_bytes + 1))
    code, _reason = socket.closed_with()
    assert code == 1009


def test_message_within_the_bound__runs(live_url: str, live_app: Starlette, api: Api, tenant: Tenant) -> None:
    with bounds(live_app, max_body_bytes=4096):
        socket = admin_socket(live_url, api, tenant)
        socket.subscribe("1", padded(3000))
        subscribed(live_app, tenant.org_id)
        tenant.employee()
        assert socket.next_of("1")["type"] == "next"
        socket.close()


def test_operation_id_over_128_characters__4400(live_url: str, api: Api, tenant: Tenant) -> None:
    socket = admin_socket(live_url, api, tenant)
    socket.subscribe("x" * 10_000, DIRECTORY)
    code, reason = socket.closed_with()
    assert code == 4400 and "1 to 128 characters" in reason


def test_operation_id_of_128_characters__runs(live_url: str, live_app: Starlette, api: Api, tenant: Tenant) -> None:
    socket = admin_socket(live_url, api, tenant)
    socket.subscribe("x" * 128, DIRECTORY)
    subscribed(live_app, tenant.org_id)
    socket.close()

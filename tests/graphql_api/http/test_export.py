"""``GET /export``: admins download their organisation, resume a dropped download, pay for it."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

import httpx
import orjson
import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.kinds import layout
from datastore.kinds.entities import Role
from datastore.signin import api_keys
from datastore.table.pagination import PageRequest
from datastore.writes import audit
from graphql_api.http import export as download
from graphql_api.limits.tenant_rate import TenantBuckets
from graphql_api.request.cursors import CursorCodec
from graphql_api.request.services import Services
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant, TenantFactory
from tests.datastore.lifecycle.complete import Complete, complete
from tests.datastore.support import employee_items, raw_employees, write_items
from tests.graphql_api.fixtures import Api

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CHECKPOINT = b'{"checkpoint"'
# Each completed download records itself in the audit trail: the next one exports that event.
EXPORT_EVENT = b'"organization.export"'


def _data(lines: list[bytes]) -> list[bytes]:
    """The item lines, less the events of earlier downloads."""
    return [line for line in lines if line.startswith(b'{"family"') and EXPORT_EVENT not in line]


def _complete(lines: list[bytes]) -> None:
    """The end line counts every item line before it (the resumed part's with the parts before)."""
    assert orjson.loads(lines[-1])["end"]["items"] == sum(1 for line in lines if line.startswith(b'{"family"'))


@pytest.fixture
def whole(make_tenant: TenantFactory) -> Complete:
    return complete(make_tenant())


@pytest.fixture
def large(make_tenant: TenantFactory, client: DynamoDBClient) -> Tenant:
    """More than two checkpoints' worth of items (1,000 between two)."""
    tenant = make_tenant()
    people = raw_employees(tenant.org_id, 160)
    write_items(client, tenant.table.name, [item for emp in people for item in employee_items(emp)])
    return tenant


def _get(http: httpx.Client, token: str | None, **params: str) -> httpx.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return http.get("/export", params=params, headers=headers)


def _lines(body: bytes) -> list[bytes]:
    return gzip.decompress(body).splitlines(keepends=True)


def test_export__an_admin__downloads_the_whole_organisation(api: Api, whole: Complete) -> None:
    response = _get(api.http, api.token(whole.tenant.admin))

    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/gzip"
    assert "content-encoding" not in response.headers
    assert response.headers["content-disposition"].startswith(f'attachment; filename="{whole.tenant.org_id}-')
    lines = _lines(response.content)
    assert orjson.loads(lines[0])["orgId"] == whole.tenant.org_id
    assert orjson.loads(lines[-1])["end"]["items"] == sum(1 for line in lines if line.startswith(b'{"family"'))
    assert lines[-2].startswith(CHECKPOINT)
    assert whole.employee.email.encode() in response.content or whole.employee.email.encode() in b"".join(lines)
    assert whole.api_key.secret_hash.encode() not in b"".join(lines)


def test_export__audited_with_the_admin_as_actor(api: Api, whole: Complete) -> None:
    _get(api.http, api.token(whole.tenant.admin)).raise_for_status()

    [latest] = run(audit.list_audit_events(whole.tenant.table, PageRequest(first=1))).items
    assert (latest.action, latest.actor_id) == ("organization.export", whole.tenant.admin.emp_id)


def test_export__an_admin_api_key__downloads(api: Api, whole: Complete) -> None:
    assert _get(api.http, whole.secret).status_code == 200


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_export__not_an_admin__forbidden(api: Api, whole: Complete, role: Role) -> None:
    response = _get(api.http, api.token(whole.tenant.employee(role=role)))

    assert response.status_code == 403
    assert response.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"


def test_export__an_employee_api_key__forbidden(api: Api, whole: Complete) -> None:
    _key, secret = run(api_keys.create_api_key(whole.tenant.table, name="reader", role=Role.EMPLOYEE))
    assert _get(api.http, secret).status_code == 403


def test_export__no_token__unauthenticated(api: Api) -> None:
    response = _get(api.http, None)
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"] == {"code": "UNAUTHENTICATED", "reason": "TOKEN_MISSING"}


def test_export__a_platform_operator__forbidden(api: Api) -> None:
    assert api.http.get("/export", headers={"Authorization": f"Bearer {api.platform.token}"}).status_code == 403


def test_export__a_suspended_organisation__unauthenticated(api: Api, whole: Complete, client: DynamoDBClient) -> None:
    client.update_item(
        TableName=whole.tenant.table.name,
        Key=layout.ORGANIZATION.key_at(whole.tenant.org_id).wire(),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "suspended"}},
    )
    response = _get(api.http, api.token(whole.tenant.admin))
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"] == {"code": "UNAUTHENTICATED", "reason": "ACCOUNT_INACTIVE"}


def test_export__resumed_after_each_checkpoint__the_rest(api: Api, large: Tenant) -> None:
    token = api.token(large.admin)
    full = _lines(_get(api.http, token).content)
    checkpoints = [n for n, line in enumerate(full) if line.startswith(CHECKPOINT)]
    assert len(checkpoints) >= 3

    for n in checkpoints[:-1]:
        after = orjson.loads(full[n])["checkpoint"]
        rest = _lines(_get(api.http, token, after=after).content)
        assert not rest[0].startswith(b'{"exportedAt"')  # no header
        assert _data(rest) == _data(full[n + 1 :])
        _complete(full[: n + 1] + rest)


def test_export__a_dropped_connection__resumed_from_the_last_checkpoint_received(api: Api, large: Tenant) -> None:
    token = api.token(large.admin)
    received = bytearray()
    with api.http.stream("GET", "/export", headers={"Authorization": f"Bearer {token}"}) as response:
        for chunk in response.iter_raw():
            received += chunk
            if CHECKPOINT in zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(bytes(received)):
                break  # the connection drops here
    # What a client does: keep the lines up to the last checkpoint it got whole, resume after it.
    partial = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(bytes(received)).splitlines(keepends=True)
    last = max(n for n, line in enumerate(partial) if line.startswith(CHECKPOINT) and line.endswith(b"\n"))
    kept = partial[: last + 1]
    resumed = _lines(_get(api.http, token, after=orjson.loads(kept[-1])["checkpoint"]).content)

    assert _data(kept + resumed) == _data(_lines(_get(api.http, token).content))
    _complete(kept + resumed)


def test_export__a_checkpoint_edited_or_of_another_organisation__bad_user_input(
    api: Api, large: Tenant, make_tenant: TenantFactory
) -> None:
    other = make_tenant("Other")
    full = _lines(_get(api.http, api.token(large.admin)).content)
    checkpoint = orjson.loads(next(line for line in full if line.startswith(CHECKPOINT)))["checkpoint"]

    for token, after in [
        (api.token(large.admin), checkpoint[:-2] + ("AA" if not checkpoint.endswith("AA") else "BB")),
        (api.token(other.admin), checkpoint),
        (api.token(large.admin), "nonsense"),
    ]:
        response = _get(api.http, token, after=after)
        assert response.status_code == 400
        assert response.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


def test_pay__charges_the_bucket__waiting_while_it_is_empty(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> None:
    """Read units become cost units; an empty bucket is waited for, never overdrawn."""
    clock = [0.0]
    buckets = TenantBuckets(per_second=1000, burst=10_000, clock=lambda: clock[0])
    settings = replace(api_settings, tenant_cost_burst=10_000)
    services = Services(settings, new_datastore(table_name), ThreadPoolExecutor(1), CursorCodec("s"), buckets)  # type: ignore[arg-type]
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)
        clock[0] += seconds

    async def pay() -> None:
        original = asyncio.sleep
        download.asyncio.sleep = sleep  # type: ignore[assignment]
        try:
            await download.ExportDownload(services)._pay("ORG", 300)  # type: ignore[arg-type]
        finally:
            download.asyncio.sleep = original  # type: ignore[assignment]

    asyncio.run(pay())

    # 300 RCU x 50 = 15,000 units, in parts of 5,000 (half the burst): two at once, then a refill.
    assert sum(waited) == pytest.approx(5.0)
    assert buckets.charge("ORG", 1).admitted is False  # all spent

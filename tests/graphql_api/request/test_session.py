"""A request's session (graphql_api/request/session.py): when it reaches tenant data, and once it is over."""

from __future__ import annotations

import asyncio
import gc
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from datastore.aws import calls
from datastore.kinds.entities import Employee
from datastore.values.ids import OrgId
from graphql_api.execution.errors import ApiError
from graphql_api.request.cursors import CursorCodec
from graphql_api.request.principal import Principal
from graphql_api.request.services import Services
from graphql_api.request.session import Deadline, RequestSession
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.graphql_api.fixtures import Api, Demo

DIRECTORY = "{ organization { departments { edges { node { name employees { edges { node { email } } } } } } } }"


def employees_alive() -> int:
    return sum(1 for obj in gc.get_objects() if type(obj) is Employee)


def test_request_over__what_it_loaded_is_freed_without_the_cyclic_collector(api: Api, demo: Demo) -> None:
    """The loaders and the session hold each other (the loaders run their calls through the
    session); left as a cycle, every entity a request read waited for a full collection,
    which walked them all while every request in flight stalled (Q1: 1,000 employees)."""
    gc.collect()
    gc.disable()  # what is freed from here on is freed by reference counting alone
    try:
        before = employees_alive()
        body = api.as_(demo.person("alice@acme.co")).query(DIRECTORY)
        time.sleep(0.3)  # the server's thread ends the request after its last byte is sent
        after = employees_alive()
    finally:
        gc.enable()
    assert "errors" not in body, body["errors"]
    listed = sum(len(d["node"]["employees"]["edges"]) for d in body["data"]["organization"]["departments"]["edges"])
    assert listed >= 5
    assert after - before <= 1  # the caller, whom the active check may keep


def services(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, pool: ThreadPoolExecutor
) -> Services:
    return Services(api_settings, new_datastore(table_name), pool, CursorCodec(api_settings.jwt_secret))


def test_loaders__reading_them__calls_nothing_and_starts_nothing(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tenant: Tenant
) -> None:
    """Reading ``session.loaders`` makes them; the first load, not the read, starts what waits
    for tenant data (the caller's active check queues its reads then), and what it queues goes
    out in that first load's batch, ahead of it."""
    started: list[Any] = []

    def check(session: RequestSession) -> None:
        started.append(session.loaders.organization.load(tenant.org_id))  # as auth/active.py does

    async def run(session: RequestSession) -> tuple[int, int, Any, Any]:
        try:
            session.when_tenant_reached(lambda: check(session))
            loaders = session.loaders
            assert session.loaders is loaders
            read_without_reaching = len(started)
            first = loaders.employee.get(tenant.admin.emp_id)
            task = asyncio.ensure_future(first)
            await asyncio.sleep(0)
            session.when_tenant_reached(lambda: started.append("at once, once reached"))
            return read_without_reaching, len(started), await task, await started[0]
        finally:
            await session.services.datastore.aclose()  # this loop's connections, as the app's lifespan

    principal = Principal(tenant.admin.emp_id, tenant.org_id, tenant.admin.role)
    with ThreadPoolExecutor(2) as pool, calls.listening() as log:
        session = RequestSession(services(new_datastore, table_name, api_settings, pool), principal, Deadline.after(10))
        before, after, admin, organization = asyncio.run(run(session))
    assert (before, after) == (0, 2)
    assert admin.emp_id == tenant.admin.emp_id and organization.org_id == tenant.org_id
    assert log.operations() == ["BatchGetItem"]
    (keys,) = [asked["Keys"] for asked in log.calls[0].params["RequestItems"].values()]
    assert tenant.admin.emp_id not in str(keys[0]) and tenant.admin.emp_id in str(keys[1])


def test_tenant_table__a_read_without_a_loader__reaches_tenant_data_too(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tenant: Tenant
) -> None:
    started: list[str] = []
    principal = Principal(tenant.admin.emp_id, tenant.org_id, tenant.admin.role)
    with ThreadPoolExecutor(1) as pool:
        session = RequestSession(services(new_datastore, table_name, api_settings, pool), principal, Deadline.after(10))
        session.when_tenant_reached(lambda: started.append("check"))
        table = session.tenant_table()
    assert started == ["check"]
    assert table.scope.org_id == tenant.org_id  # type: ignore[attr-defined]


def test_require_tenant__made_once_for_its_principal__refusals_every_time(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, tenant: Tenant
) -> None:
    """``node`` asks for the scope once per id: the session makes it once, for the caller it
    was made for; a caller without a tenant is refused each time it asks."""
    principal = Principal(tenant.admin.emp_id, tenant.org_id, tenant.admin.role)
    with ThreadPoolExecutor(1) as pool:
        session = RequestSession(services(new_datastore, table_name, api_settings, pool), principal, Deadline.after(10))
        scope = session.require_tenant()
        assert session.require_tenant() is scope
        assert (scope.org_id, scope.actor_id) == (tenant.org_id, tenant.admin.emp_id)
        other = Principal("e-other", OrgId("o-other"), tenant.admin.role)
        session.principal = other
        assert session.require_tenant().org_id == "o-other"
        for refused in (None, Principal("operator", None, None)):
            session.principal = refused
            for _ in range(2):
                with pytest.raises(ApiError):
                    session.require_tenant()

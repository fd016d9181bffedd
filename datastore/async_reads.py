"""The GraphQL read path's reads that are more than one page of a list, on the event loop.

Each is the twin of a datastore function that reads through ``Table`` and is built from the
same pieces (keys, readers, the audit trail's walk), so what is read and how it is read is
said once; only the waiting differs. A list's page is ``AsyncTable.page`` of the list's
``PageQuery`` (``departments.departments_of``, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from datastore import api_keys, audit, by_id, employees
from datastore.async_table import AsyncTable
from datastore.by_id import Kind
from datastore.entities import ApiKeyGrant, AuditEvent
from datastore.ids import EmployeeId
from datastore.items import Item
from datastore.keys import Key
from datastore.pagination import Page, PageRequest


async def get_by_id(table: AsyncTable, wanted: Sequence[tuple[Kind, Any]]) -> list[Any]:
    """``by_id.get_by_id``: one distinct key a GetItem, more a BatchGetItem (in chunks)."""
    located, to_read = by_id.locate(table.tenant.org_id, wanted)
    found: dict[Key, Item | None]
    if len(to_read) == 1:
        found = {to_read[0]: await table.get(to_read[0])}
    else:
        found = dict(zip(to_read, await table.batch_get(to_read), strict=True)) if to_read else {}
    return by_id.answers(wanted, located, found)


async def find_employee_id_by_email(table: AsyncTable, email: str) -> EmployeeId | None:
    """``employees.find_employee_id_by_email``: one GetItem on the email pointer."""
    return employees.employee_id_of_pointer(
        await table.get(employees.email_pointer_key(table.tenant.org_id, email)), email
    )


async def list_audit_events(
    table: AsyncTable, request: PageRequest, *, now: datetime | None = None
) -> Page[AuditEvent]:
    """``audit.list_audit_events``: the walk's Queries, awaited."""
    walk = audit.audit_walk(table.tenant.org_id, request, now=now)
    try:
        asked = next(walk)
        while True:
            asked = walk.send(await table.query(**asked.params()))
    except StopIteration as done:
        page: Page[AuditEvent] = done.value
        return page


async def find_grant(table: AsyncTable, secret: str) -> ApiKeyGrant | None:
    """``api_keys.find_grant``: one strongly consistent GetItem (``table`` has the ApiKeyScope)."""
    return api_keys.grant_of(await table.get(api_keys.grant_key(secret), consistent=True))

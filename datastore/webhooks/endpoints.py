"""An organisation's webhook endpoints, as its admins manage them: each write with its audit event.

An endpoint is one item in the organisation's partition (``WEBHOOK#<endpoint>``), its signing
secret included: HMAC signing needs the secret itself, so unlike an API key's it cannot be
kept as a hash. It never leaves the table otherwise: the audit trail records the endpoint
without it, an export leaves it out (datastore/lifecycle/kinds.py), and only
``create_endpoint`` and ``rotate_secret`` return it, once.

Event types are audit actions (``employee.create``), or ``<entity>.*`` for every action on
one kind of entity; the entity must be a kind the table declares (datastore/kinds/layout.py), so a
misspelt type is refused rather than silently never matched.
"""

from __future__ import annotations

import base64
import contextlib
import re
import secrets
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Final

from datastore.errors import Conflict, InvalidInput, NotFound
from datastore.kinds import layout
from datastore.kinds.webhook_entities import WebhookEndpoint
from datastore.table import transact, updates
from datastore.table.scoped import Table
from datastore.values import items, validation
from datastore.values.ids import new_id
from datastore.values.items import Item
from datastore.writes import envelope
from datastore.writes.changes import Change

MAX_ENDPOINTS: Final = 20
MAX_EVENT_TYPES: Final = 50
URL_MAX: Final = 2048
SECRET_PREFIX: Final = "whsec_"
SECRET_BYTES: Final = 32
# How long the replaced secret keeps signing beside the new one after a rotation.
ROTATION_OVERLAP: Final = timedelta(hours=24)
_TYPE: Final = re.compile(r"([a-z][A-Za-z]*)\.(\*|[a-z][A-Za-z]*)")
# The entity names an event type may start with: every declared kind's tag, as actions spell it.
ENTITIES: Final = frozenset(kind.tag[:1].lower() + kind.tag[1:] for kind in layout.KINDS)


def new_secret() -> str:
    """``whsec_`` and 32 random bytes in base64, as Standard Webhooks spells a secret."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def event_types(values: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The subscribed types, each an action or ``<entity>.*``, deduplicated in the order given."""
    found = tuple(dict.fromkeys(value.strip() for value in values))
    if not found:
        raise InvalidInput(
            "event_types", "name at least one event type (an action such as employee.create, or employee.*)"
        )
    if len(found) > MAX_EVENT_TYPES:
        raise InvalidInput("event_types", f"must hold at most {MAX_EVENT_TYPES} types")
    for value in found:
        match = _TYPE.fullmatch(value)
        if match is None:
            raise InvalidInput("event_types", f"{value[:100]!r} is not an action (employee.create) or entity.*")
        if match.group(1) not in ENTITIES:
            raise InvalidInput("event_types", f"{value!r}: {match.group(1)!r} is not a kind of object")
    return found


def url(value: str) -> str:
    """The URL's text checked (length, characters); where it may lead is the caller's check."""
    return validation.text(value, "url", maximum=URL_MAX)


def matches(endpoint: WebhookEndpoint, action: str) -> bool:
    """Whether ``endpoint`` subscribes to audit events of ``action``."""
    entity = action.split(".", 1)[0]
    return any(wanted == action or wanted == f"{entity}.*" for wanted in endpoint.event_types)


def _audited(endpoint: WebhookEndpoint) -> Item:
    """The endpoint as the audit trail records it: never its secrets; ``enabled`` as text (the
    trail records text and numbers)."""
    item = layout.WEBHOOK_ENDPOINT.item(endpoint)
    for name in (layout.SECRET, layout.PREVIOUS_SECRET):
        item.pop(name, None)
    item["enabled"] = items.s("true" if endpoint.enabled else "false")
    return item


async def list_endpoints(table: Table, *, consistent: bool = False) -> list[WebhookEndpoint]:
    """The organisation's endpoints in the order they were created (at most MAX_ENDPOINTS: one Query)."""
    org_id = table.tenant.org_id
    result = await table.query(
        layout.WEBHOOK_ENDPOINT.partition(org_id),
        sk_prefix=layout.WEBHOOK_ENDPOINT.sort_prefix,
        limit=MAX_ENDPOINTS + 1,
        consistent=consistent,
    )
    return [layout.WEBHOOK_ENDPOINT.read(item) for item in result.items]


async def get_endpoint(table: Table, endpoint_id: str, *, consistent: bool = True) -> WebhookEndpoint:
    found = await table.get(layout.WEBHOOK_ENDPOINT.key_at(table.tenant.org_id, endpoint_id), consistent=consistent)
    if found is None:
        raise NotFound(WebhookEndpoint, endpoint_id)
    return layout.WEBHOOK_ENDPOINT.read(found)


async def create_endpoint(table: Table, *, url_text: str, types: list[str], description: str = "") -> WebhookEndpoint:
    """A new enabled endpoint with a new secret (``endpoint.secret``: the caller shows it once).

    InvalidInput past MAX_ENDPOINTS (counted strongly consistently just before the write).
    """
    org_id = table.tenant.org_id
    endpoint = WebhookEndpoint(
        org_id=org_id,
        endpoint_id=new_id(),
        url=url(url_text),
        event_types=event_types(types),
        description=validation.description(description),
        enabled=True,
        created_at=items.now(),
        version=1,
        secret=new_secret(),
    )
    if len(await list_endpoints(table, consistent=True)) >= MAX_ENDPOINTS:
        raise InvalidInput("request", f"an organisation has at most {MAX_ENDPOINTS} webhook endpoints")
    record = layout.WEBHOOK_ENDPOINT.item(endpoint)
    op = transact.put_new(record, lambda _old: Conflict("the endpoint id is already taken"))
    change = Change(
        "webhookEndpoint.create", layout.WEBHOOK_ENDPOINT.tag, endpoint.endpoint_id, org_id, None, _audited(endpoint)
    )
    await envelope.commit(table, [op], change)
    return endpoint


async def _replace(table: Table, found: WebhookEndpoint, changed: WebhookEndpoint, action: str) -> WebhookEndpoint:
    """Write ``changed`` over ``found`` if nobody wrote it since (its version), with the audit event."""
    changed = replace(changed, version=found.version + 1)
    op = transact.put(
        layout.WEBHOOK_ENDPOINT.item(changed),
        condition="#version = :version",
        names={"#version": layout.VERSION},
        values={":version": items.n(found.version)},
        on_failed=lambda _old: Conflict("the endpoint changed meanwhile: read it again", current_version=None),
    )
    change = Change(
        action, layout.WEBHOOK_ENDPOINT.tag, found.endpoint_id, found.org_id, _audited(found), _audited(changed)
    )
    await envelope.commit(table, [op], change)
    return changed


async def update_endpoint(
    table: Table,
    endpoint_id: str,
    *,
    url_text: str | None = None,
    types: list[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
) -> WebhookEndpoint:
    """Change what is given; enabling an endpoint clears why it was disabled and its failing time."""
    found = await get_endpoint(table, endpoint_id)
    changed = replace(
        found,
        url=found.url if url_text is None else url(url_text),
        event_types=found.event_types if types is None else event_types(types),
        description=found.description if description is None else validation.description(description),
        enabled=found.enabled if enabled is None else enabled,
    )
    if enabled is True:
        changed = replace(changed, disabled_reason=None, failing_since=None)
    elif enabled is False and found.enabled:
        changed = replace(changed, disabled_reason="disabled by an admin")
    if changed == found:
        raise InvalidInput("request", "changes nothing: name at least one new value")
    return await _replace(table, found, changed, "webhookEndpoint.update")


async def rotate_secret(table: Table, endpoint_id: str, *, now: datetime | None = None) -> WebhookEndpoint:
    """A new secret; the one it replaces signs beside it for ROTATION_OVERLAP (none after a restore)."""
    found = await get_endpoint(table, endpoint_id)
    at = now or items.now()
    changed = replace(
        found,
        secret=new_secret(),
        previous_secret=found.secret,
        previous_secret_until=None if found.secret is None else at + ROTATION_OVERLAP,
    )
    return await _replace(table, found, changed, "webhookEndpoint.rotateSecret")


async def disable_failing(table: Table, endpoint_id: str, reason: str) -> WebhookEndpoint | None:
    """The dispatcher's disabling of an endpoint that kept failing (its audit event names no
    actor but the dispatcher's); None when it was changed or disabled meanwhile."""
    found = await get_endpoint(table, endpoint_id)
    if not found.enabled:
        return None
    try:
        return await _replace(
            table, found, replace(found, enabled=False, disabled_reason=reason), "webhookEndpoint.disable"
        )
    except Conflict:
        return None


async def record_health(table: Table, endpoint: WebhookEndpoint, *, failing_since: datetime | None) -> None:
    """Set or clear when the endpoint started failing, unless it already says so. Not an audit
    event (the deliveries are the record) and not a new version: an admin's concurrent update
    is not made to conflict with the dispatcher's bookkeeping."""
    if endpoint.failing_since == failing_since or (failing_since is not None and endpoint.failing_since is not None):
        return
    key = layout.WEBHOOK_ENDPOINT.key_of(endpoint)
    if failing_since is None:
        op = transact.update(key, [updates.Remove("failingSince")], condition="attribute_exists(PK)")
    else:
        op = transact.update(
            key,
            [updates.Set("failingSince", items.s(items.timestamp(failing_since)))],
            condition="attribute_exists(PK) AND attribute_not_exists(failingSince)",
        )
    with contextlib.suppress(Conflict):
        await table.write([op])


async def delete_endpoint(table: Table, endpoint_id: str) -> WebhookEndpoint:
    """Delete the endpoint; its deliveries stay (with their TTL) and are never attempted again."""
    found = await get_endpoint(table, endpoint_id)
    op = transact.delete(
        layout.WEBHOOK_ENDPOINT.key_of(found),
        condition="#version = :version",
        names={"#version": layout.VERSION},
        values={":version": items.n(found.version)},
        on_failed=lambda _old: Conflict("the endpoint changed meanwhile: read it again"),
    )
    tombstone = {**_audited(found), "deleted": items.s("true")}
    await envelope.commit(
        table,
        [op],
        Change(
            "webhookEndpoint.delete",
            layout.WEBHOOK_ENDPOINT.tag,
            found.endpoint_id,
            found.org_id,
            _audited(found),
            tombstone,
        ),
    )
    return found

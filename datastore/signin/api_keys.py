"""API keys for integrations: creating, listing, revoking, authenticating, recording use.

A key is two items written in one transaction (with its audit event):

- the organisation's record ``ORG#<org> / APIKEY#<key>``: name, role, status, createdAt,
  lastUsedAt, revokedAt, and the SHA-256 of the secret (to reach the lookup item). Admins
  list these with one Query on the organisation's partition.
- the lookup item ``APIKEY#<sha256(secret)> / #APIKEY`` outside every tenant partition: the
  organisation, key id, role and status. A bearer key is authenticated by hashing it and
  reading this one item (one GetItem), before any tenant is known.

Only the hash of the secret is stored. The secret is 256 random bits, so a plain SHA-256 is
enough: a slow password hash (bcrypt, scrypt) protects guessable secrets from brute force,
and there is nothing to guess here; it would only cost every request milliseconds of CPU.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Final

from datastore.errors import Conflict, InvalidInput, NotFound
from datastore.kinds import layout
from datastore.kinds.entities import ApiKey, ApiKeyGrant, ApiKeyStatus, Role
from datastore.signin import identity_providers
from datastore.table import by_id, transact, updates
from datastore.table.pagination import Page, PageQuery, PageRequest
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values import items, validation
from datastore.values.ids import ApiKeyId, OrgId, new_id
from datastore.values.items import Item
from datastore.writes import envelope
from datastore.writes.changes import Change

# A secret starts with this, so it is told apart from a JWT before any cryptography.
SECRET_PREFIX: Final = "hrk_"
SECRET_BYTES: Final = 32
# ``hrk_`` then the 32 bytes in unpadded base64url (43 characters).
_SECRET: Final = re.compile(r"hrk_[A-Za-z0-9_-]{43}")
# The roles a key may be given: a read-only directory, or an organisation's administrator.
KEY_ROLES: Final = frozenset({Role.EMPLOYEE, Role.ADMIN})
# lastUsedAt is written at most this often per key (the conditional update enforces it).
LAST_USED_RESOLUTION: Final = timedelta(seconds=60)


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(SECRET_BYTES)


def is_api_key(token: str) -> bool:
    """True when a bearer token is meant as an API key (a JWT never starts with the prefix)."""
    return token.startswith(SECRET_PREFIX)


def secret_hash(secret: str) -> str:
    """The SHA-256 of a well-formed secret (lowercase hex); InvalidInput for a malformed one."""
    if _SECRET.fullmatch(secret) is None:
        raise InvalidInput("secret", "is not a well-formed API key")
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _without_hash(item: Item) -> Item:
    """The record as the audit trail shows it: the hash is a lookup key, not a field of interest."""
    return {name: value for name, value in item.items() if name != layout.SECRET_HASH}


def _lookup_item(key: ApiKey) -> Item:
    """The key's lookup item, found by the hash of the secret a caller presents."""
    grant = ApiKeyGrant(key.org_id, key.key_id, key.role, key.status)
    return layout.API_KEY_LOOKUP.item(grant, secret_hash=key.secret_hash)


async def create_api_key(table: Table, *, name: str, role: Role) -> tuple[ApiKey, str]:
    """A new ACTIVE key and its secret (returned here once, stored nowhere).

    One transaction of three items: the record, the lookup item and the audit event. No
    idempotency key: a replay would have to return the secret, which is never stored.
    """
    org_id = table.tenant.org_id
    if role not in KEY_ROLES:
        raise InvalidInput("role", "an API key is either EMPLOYEE (read-only) or ADMIN")
    secret = new_secret()
    key = ApiKey(
        org_id=org_id,
        key_id=ApiKeyId(new_id()),
        name=validation.name(name),
        role=role,
        status=ApiKeyStatus.ACTIVE,
        created_at=items.now(),
        secret_hash=secret_hash(secret),
    )
    record = layout.API_KEY.item(key)
    ops = [
        transact.put_new(record, lambda _old: Conflict("the API key id is already taken")),
        transact.put_new(_lookup_item(key), lambda _old: Conflict("the API key secret is already taken")),
    ]
    change = Change("apiKey.create", layout.API_KEY.tag, key.key_id, org_id, None, _without_hash(record))
    await envelope.commit(table, ops, change)
    return key, secret


async def get_api_key(table: Table, key_id: ApiKeyId, *, consistent: bool = False) -> ApiKey | None:
    return await by_id.get(table, layout.API_KEY, key_id, consistent=consistent)


def api_keys_of(org_id: OrgId) -> PageQuery[ApiKey]:
    """The organisation's keys in id order (the order they were created): one Query."""
    return PageQuery(layout.API_KEY.partition(org_id), layout.API_KEY.read, sk_prefix=layout.API_KEY.sort_prefix)


async def list_api_keys(table: Table, request: PageRequest) -> Page[ApiKey]:
    return await table.page(api_keys_of(table.tenant.org_id), request)


async def revoke_api_key(table: Table, key_id: ApiKeyId) -> ApiKey:
    """Revoke an ACTIVE key: its record and its lookup item become REVOKED in one transaction.

    When the key registered or last changed the organisation's identity provider (data from
    before keys were refused that write), the same transaction ends the sessions begun through
    it (datastore/signin/identity_providers.py ``end_sessions_op``): a session a leaked key's provider
    began does not outlive the key. NotFound for an id naming no key of this organisation;
    Conflict when already revoked.
    """
    org_id = table.tenant.org_id
    found = await get_api_key(table, key_id, consistent=True)
    if found is None:
        raise NotFound(ApiKey, key_id)
    if found.status is not ApiKeyStatus.ACTIVE:
        raise Conflict("the API key is already revoked")
    at = items.now()
    revoked = replace(found, status=ApiKeyStatus.REVOKED, revoked_at=at)
    status = {"#status": layout.STATUS}
    active = {":active": items.s(ApiKeyStatus.ACTIVE.value)}

    def lost_race(_old: Item | None) -> Conflict:
        return Conflict("the API key is already revoked")

    ops = [
        transact.update(
            layout.API_KEY.key_of(found),
            [
                updates.Set(layout.STATUS, items.s(ApiKeyStatus.REVOKED.value)),
                updates.Set(layout.REVOKED_AT, items.s(items.timestamp(at))),
            ],
            condition="#status = :active",
            names=status,
            values=active,
            on_failed=lost_race,
        ),
    ]
    if found.secret_hash is not None:  # a key restored from an export has no lookup item
        # The lookup item must be this organisation's own key (it always is: the hash came
        # from the record), so a revoke can never touch another tenant's grant.
        ops.append(
            transact.update(
                layout.API_KEY_LOOKUP.key_at(found.secret_hash),
                [updates.Set(layout.STATUS, items.s(ApiKeyStatus.REVOKED.value))],
                condition="#orgId = :org AND #keyId = :key AND #status = :active",
                names={**status, "#orgId": layout.ORG_ID, "#keyId": layout.KEY_ID},
                values={**active, ":org": items.s(org_id), ":key": items.s(found.key_id)},
                on_failed=lost_race,
            )
        )
    sessions_end = await identity_providers.end_sessions_op(table, org_id, found.key_id, at)
    if sessions_end is not None:
        ops.append(sessions_end)
    before = _without_hash(layout.API_KEY.item(found))
    after = _without_hash(layout.API_KEY.item(revoked))
    await envelope.commit(table, ops, Change("apiKey.revoke", layout.API_KEY.tag, found.key_id, org_id, before, after))
    return revoked


async def find_grant(table: Table, secret: str) -> ApiKeyGrant | None:
    """What a presented secret grants: exactly one strongly consistent GetItem.

    ``table`` has the ApiKeyScope. Strongly consistent, so a revocation holds from the very
    next request (1 RCU rather than 0.5 for an item under 4 KB). InvalidInput for a
    malformed secret, before any request is sent.
    """
    return grant_of(await table.get(grant_key(secret), consistent=True))


def grant_key(secret: str) -> keys.Key:
    """The lookup item of a presented secret (InvalidInput for a malformed one)."""
    return layout.API_KEY_LOOKUP.key_at(secret_hash(secret))


def grant_of(item: Item | None) -> ApiKeyGrant | None:
    return None if item is None else layout.API_KEY_LOOKUP.read(item)


async def record_use(table: Table, key_id: ApiKeyId, at: datetime) -> bool:
    """Set the key's lastUsedAt to ``at`` unless it was set less than a minute before.

    One conditional UpdateItem on the organisation's record; False when the condition kept
    it unwritten (used within the minute, or the record is gone). Holds across processes:
    two servers using one key in the same minute write once.
    """
    org_id = table.tenant.org_id
    last_used = {"#lastUsedAt": layout.LAST_USED_AT}
    op = transact.update(
        layout.API_KEY.key_at(org_id, key_id),
        [updates.Set(layout.LAST_USED_AT, items.s(items.timestamp(at)))],
        condition="attribute_exists(PK) AND (attribute_not_exists(#lastUsedAt) OR #lastUsedAt < :cutoff)",
        names=last_used,
        values={":cutoff": items.s(items.timestamp(at - LAST_USED_RESOLUTION))},
        on_failed=lambda _old: Conflict("used within the minute"),
    )
    try:
        await table.write([op])
    except Conflict:
        return False
    return True

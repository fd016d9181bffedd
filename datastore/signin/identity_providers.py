"""Organisations' own OpenID providers: registering, changing and removing one; sign-in's lookups.

An organisation has at most one provider, kept as two kinds of item written in one
transaction with its audit event (``identityProvider.register``, ``.change``, ``.remove``):

- the organisation's record ``ORG#<org> / IDP``: issuer, client ids, the endpoints read from
  the provider's discovery document, a version. Admins and operators read it.
- one client item per client id, ``ISSUER#<issuer> / CLIENT#<clientId>``, outside every
  tenant: sign-in reads the one an ID token names (its ``iss``, and its ``azp`` or single
  ``aud``) with one GetItem, before any tenant is known, and learns whose provider it is.
  Several organisations may share an issuer (Google's is the same for every Workspace
  customer), each with clients of its own; a client item is written only where none exists
  or it is this organisation's own, so no organisation can take another's.

Fetching the discovery document is the API's business (graphql_api/auth/discovery.py): the
datastore is handed the endpoints it read, and checks only the shape of what it stores.

Sessions begun through the provider end with it: each refresh checks its record
(datastore/signin/sessions.py), so removing it, or registering another issuer, ends them. Revoking an
API key that last registered or changed the provider (which only data from before keys were
refused that write can show) ends them too, while keeping the provider: the record's
``sessionsEndedAt`` (``end_sessions_op``), which a change keeps.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Final

from datastore.errors import Conflict, InvalidInput, NotFound
from datastore.kinds import layout
from datastore.kinds.entities import IdentityProvider, IssuerClient, Organization
from datastore.table import transact, updates
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values import items
from datastore.values.ids import OrgId, new_id_at
from datastore.values.items import Item
from datastore.writes import envelope
from datastore.writes.changes import Change

# An issuer is an https URL (OIDC Core 2); this bounds the key it names. URLs in practice are
# well under 100 characters (Entra ID's, with a tenant id, is 70).
ISSUER_MAX: Final = 255
CLIENT_ID_MAX: Final = 255
# Client ids one organisation registers at its provider (a web app, a mobile app, ...):
# bounds the transaction (one client item each, twice when the issuer changes).
CLIENT_IDS_MAX: Final = 5
# Printable ASCII without spaces: every provider's client ids (UUIDs, Google's
# "<n>-<hash>.apps.googleusercontent.com", Okta's "0oa..."), and the space-separated list
# they are stored in stays unambiguous.
_CLIENT_ID: Final = re.compile(rf"[!-~]{{1,{CLIENT_ID_MAX}}}")
_URL_TEXT: Final = re.compile(rf"[!-~]{{1,{ISSUER_MAX}}}")

REGISTER: Final = "identityProvider.register"
CHANGE: Final = "identityProvider.change"
REMOVE: Final = "identityProvider.remove"
# Audit events read after a provider's change to find the change's own (``last_changed_by``):
# it is written within milliseconds, so only another write of the organisation in between
# comes first.
LAST_CHANGE_EVENTS: Final = 25


def issuer(value: str) -> str:
    """An issuer's text: 1 to 255 printable ASCII characters without spaces (its URL rules are
    the API's, graphql_api/auth/urls.py). Compared exactly with an ID token's ``iss``."""
    if not isinstance(value, str) or _URL_TEXT.fullmatch(value) is None:
        raise InvalidInput("issuer", f"must be a URL of 1 to {ISSUER_MAX} printable ASCII characters without spaces")
    return value


def client_ids(values: Sequence[str]) -> tuple[str, ...]:
    """The client ids in the order given (the first is the one a browser signs in with), each once."""
    found: list[str] = []
    for value in values:
        if not isinstance(value, str) or _CLIENT_ID.fullmatch(value) is None:
            raise InvalidInput(
                "client_ids", f"each must be 1 to {CLIENT_ID_MAX} printable ASCII characters without spaces"
            )
        if value in found:
            raise InvalidInput("client_ids", f"names {value!r} twice")
        found.append(value)
    if not 1 <= len(found) <= CLIENT_IDS_MAX:
        raise InvalidInput("client_ids", f"must name 1 to {CLIENT_IDS_MAX} client ids")
    return tuple(found)


async def get_identity_provider(table: Table, org_id: OrgId, *, consistent: bool = False) -> IdentityProvider | None:
    """The organisation's provider, or None: one GetItem (a tenant's table, or the operator's
    provisioning one)."""
    item = await table.get(layout.IDENTITY_PROVIDER.key_at(org_id), consistent=consistent)
    return None if item is None else layout.IDENTITY_PROVIDER.read(item)


async def find_client(table: Table, issuer: str, client_id: str) -> IssuerClient | None:
    """Whose provider issued a token for ``client_id``: one strongly consistent GetItem
    (``table`` has the SignInScope), so a removed provider signs nobody in from the next
    request on. None for text no registered issuer could have (nothing is sent then)."""
    if _URL_TEXT.fullmatch(issuer) is None or _CLIENT_ID.fullmatch(client_id) is None:
        return None
    item = await table.get(layout.ISSUER_CLIENT.key_at(issuer, client_id), consistent=True)
    return None if item is None else layout.ISSUER_CLIENT.read(item)


async def domain_owner(table: Table, domain: str) -> OrgId | None:
    """The organisation that owns an email domain (its marker item), or None: one GetItem
    (``table`` has the SignInScope)."""
    item = await table.get(layout.EMAIL_DOMAIN.key_at(domain))
    return None if item is None else layout.EMAIL_DOMAIN.read(item).org_id


def _client_put(client: IssuerClient) -> transact.Op:
    def taken(_old: Item | None) -> Conflict:
        # Named by the client the caller sent: whose it is stays unsaid.
        return Conflict(f"the client id {client.client_id} of {client.issuer} is registered by another organisation")

    return transact.put(
        layout.ISSUER_CLIENT.item(client),
        condition=f"attribute_not_exists(PK) OR {layout.ORG_ID} = :org",
        values={":org": items.s(client.org_id)},
        on_failed=taken,
    )


def _client_delete(client: IssuerClient) -> transact.Op:
    # Only ever this organisation's own (a provider's clients are written with it).
    return transact.delete(
        layout.ISSUER_CLIENT.key_of(client),
        condition=f"attribute_not_exists(PK) OR {layout.ORG_ID} = :org",
        values={":org": items.s(client.org_id)},
    )


def _clients(provider: IdentityProvider) -> list[IssuerClient]:
    return [IssuerClient(provider.issuer, client_id, provider.org_id) for client_id in provider.client_ids]


def _record_op(provider: IdentityProvider, current: IdentityProvider | None) -> transact.Op:
    def changed(_old: Item | None) -> Conflict:
        return Conflict("the organisation's identity provider changed meanwhile; read it and try again")

    if current is None:
        return transact.put_new(layout.IDENTITY_PROVIDER.item(provider), changed)
    return transact.put(
        layout.IDENTITY_PROVIDER.item(provider),
        condition=f"{layout.VERSION} = :version",
        values={":version": items.n(current.version)},
        on_failed=changed,
    )


async def set_identity_provider(
    table: Table,
    org_id: OrgId,
    *,
    issuer_url: str,
    client_id_list: Sequence[str],
    authorization_endpoint: str,
    token_endpoint: str,
    reserved: Collection[tuple[str, str]] = (),
) -> tuple[IdentityProvider, bool]:
    """Register the organisation's provider, or change it; True when it was registered anew.

    ``reserved`` are (issuer, client id) pairs no organisation may take: the platform's own
    default provider's (its ID tokens sign in every organisation without a provider). One
    transaction: the record (conditioned on the version read), a client item per client id,
    the removal of clients it no longer has, a check that the organisation exists (NotFound
    otherwise: an operator may name any id), and the audit event.
    """
    found_issuer = issuer(issuer_url)
    found_clients = client_ids(client_id_list)
    for client_id in found_clients:
        if (found_issuer, client_id) in reserved:
            raise InvalidInput("client_ids", f"{client_id} of {found_issuer} is the platform's default provider")
    for endpoint in (authorization_endpoint, token_endpoint):
        if _URL_TEXT.fullmatch(endpoint) is None:
            raise InvalidInput("issuer", "its discovery document names an endpoint that is not a URL")
    current = await get_identity_provider(table, org_id, consistent=True)
    unchanged = (found_issuer, found_clients, authorization_endpoint, token_endpoint)
    if current is not None and unchanged == (
        current.issuer,
        current.client_ids,
        current.authorization_endpoint,
        current.token_endpoint,
    ):
        return current, False  # nothing changes: no write, no audit event
    at = items.now()
    provider = IdentityProvider(
        org_id=org_id,
        issuer=found_issuer,
        client_ids=found_clients,
        authorization_endpoint=authorization_endpoint,
        token_endpoint=token_endpoint,
        created_at=at if current is None else current.created_at,
        updated_at=at,
        version=1 if current is None else current.version + 1,
        # Sessions ended by a revoked key stay ended whatever changes after.
        sessions_ended_at=None if current is None else current.sessions_ended_at,
    )
    kept = set() if current is None else {(c.issuer, c.client_id) for c in _clients(current)}
    wanted = _clients(provider)
    dropped = [] if current is None else [c for c in _clients(current) if c not in wanted]
    ops = [
        _record_op(provider, current),
        transact.check(
            layout.ORGANIZATION.key_at(org_id),
            "attribute_exists(PK)",
            on_failed=lambda _old: NotFound(Organization, org_id),
        ),
        *(_client_put(client) for client in wanted if (client.issuer, client.client_id) not in kept),
        *(_client_delete(client) for client in dropped),
    ]
    before = None if current is None else layout.IDENTITY_PROVIDER.item(current)
    after = layout.IDENTITY_PROVIDER.item(provider)
    action = REGISTER if current is None else CHANGE
    await envelope.commit(table, ops, Change(action, layout.IDENTITY_PROVIDER.tag, org_id, org_id, before, after))
    return provider, current is None


async def remove_identity_provider(table: Table, org_id: OrgId) -> IdentityProvider:
    """Remove the organisation's provider: its people sign in through the platform's default
    provider again (when one is configured). NotFound when it has none."""
    current = await get_identity_provider(table, org_id, consistent=True)
    if current is None:
        raise NotFound(IdentityProvider, org_id)

    def changed(_old: Item | None) -> Conflict:
        return Conflict("the organisation's identity provider changed meanwhile; read it and try again")

    ops = [
        transact.delete(
            layout.IDENTITY_PROVIDER.key_of(current),
            condition=f"{layout.VERSION} = :version",
            values={":version": items.n(current.version)},
            on_failed=changed,
        ),
        *(_client_delete(client) for client in _clients(current)),
    ]
    before = layout.IDENTITY_PROVIDER.item(current)
    await envelope.commit(table, ops, Change(REMOVE, layout.IDENTITY_PROVIDER.tag, org_id, org_id, before, {}))
    return current


async def last_changed_by(table: Table, provider: IdentityProvider) -> str | None:
    """Who registered or last changed ``provider`` (an employee's id, an API key's, an
    operator's name), as its audit event says: the event of its version, written in the same
    transaction a moment after the record's ``updatedAt``. One Query of the audit partition
    from that millisecond on, oldest first, of at most ``LAST_CHANGE_EVENTS`` events. None
    when it is not among them (the event aged out of the audit retention, or the month turned
    in between)."""
    at = provider.updated_at
    partition = layout.AUDIT_EVENT.partition(provider.org_id, keys.audit_bucket(at))
    # A ULID's first 10 characters are its millisecond: starting after this shorter key, the
    # Query begins at the first event of that millisecond.
    start = {keys.PK: partition, keys.SK: layout.AUDIT_EVENT.sort_prefix + new_id_at(at)[:10]}
    result = await table.query(partition, limit=LAST_CHANGE_EVENTS, start_key=start, consistent=True)
    for item in result.items:
        event = layout.AUDIT_EVENT.read(item)
        if (
            event.entity_type == layout.IDENTITY_PROVIDER.tag
            and event.action in (REGISTER, CHANGE)
            and event.after_version == provider.version
        ):
            return event.actor_id
    return None


async def end_sessions_op(table: Table, org_id: OrgId, actor_id: str, at: datetime) -> transact.Op | None:
    """The write that ends the sessions begun through the organisation's provider when
    ``actor_id`` (an API key being revoked) registered or last changed it; None when it did not
    or there is no provider. For the revocation's own transaction, so both happen or neither:
    conditioned on the version read (a change meanwhile is a Conflict: revoke again)."""
    current = await get_identity_provider(table, org_id, consistent=True)
    if current is None or await last_changed_by(table, current) != actor_id:
        return None

    def changed(_old: Item | None) -> Conflict:
        return Conflict("the organisation's identity provider changed meanwhile; try again")

    return transact.update(
        layout.IDENTITY_PROVIDER.key_of(current),
        [updates.Set(layout.SESSIONS_ENDED_AT, items.s(items.timestamp(at)))],
        condition=f"{layout.VERSION} = :version",
        values={":version": items.n(current.version)},
        on_failed=changed,
    )

"""Sessions: rotating refresh tokens, one family per sign-in, reuse revoking the family.

Signing in starts a session (one family) and gives its first refresh token. Each refresh
(RFC 6749 section 6) rotates: the presented token's generation must be the session's
current one, the session moves to the next generation and a new token is issued; the old
one stops working. A token whose generation is behind the session's has been used before:
presented again, it is a reuse (the OAuth 2.0 Security BCP's reuse detection), and the
whole session ends, the token its legitimate holder last got included.

Items (datastore/kinds/layout.py):

- the session ``ORG#<org>#SESSION#<emp> / SESSION#<session>`` in the tenant's partitions:
  status, generation, times, and ``expiresAt``, the earlier of its absolute expiry and its
  idle deadline (the last refresh plus the idle lifetime), which is also its TTL;
- one lookup item per refresh token, ``REFRESH#<sha256(token)> / #REFRESH``, outside every
  tenant: whose session, which generation. A refresh finds its session with one strongly
  consistent GetItem before any tenant is known. Lookup items live to the session's absolute
  expiry (TTL), so reuse is recognised for the whole life of the session;
- the person's ``#SIGNED_OUT`` mark in the same partition: signing out everywhere writes it
  (one PutItem, whatever the number of sessions), and a session begun before it is over.

Only the SHA-256 of a token is stored. The token is 256 random bits, so a plain hash is
enough, as for API keys (datastore/signin/api_keys.py).

A rotation is one transaction, so two refreshes with the same token cannot both win: the
session's update is conditioned on the generation the token names, so exactly one commits
and the other finds the generation moved. The same transaction checks that the organisation
and the employee are active, that the person has not signed out everywhere since the session
began, and, for a session begun through the organisation's own identity provider, that the
provider's record is still the one it was begun through and has not ended its sessions: a
refresh never succeeds for a terminated employee, a suspended organisation, a signed-out
person or a removed provider, whatever a read before it saw.

Reuse leeway. Two tabs (or a retried request) refreshing with the same token at once is not
theft, and ending the session for it signs the person out. So for ``Lifetimes.reuse_leeway``
after a rotation (30 s by default, as Auth0's and Okta's grace periods; zero turns it off),
the token it replaced answers the same new token again, and nothing is written, as long as
that new token has not been used itself; after that, or once it has, a presented used token
is a reuse and ends the family. Answering "the same new token" without storing a usable
token: the new token is not random but derived, ``hrr_`` + HMAC-SHA256(server key, the
token it replaces) (``successor``). Only whoever presents the old token and holds the key
can compute it, so the racer gets it by recomputing it, and the table still holds only
hashes; the replay is confirmed by a read of the successor's lookup item (it must be
there) and one transaction of checks (the session still at the successor's generation, the
same account checks as a rotation). A token rotated before the key changed (JWT_SECRET rotated within the leeway) is
not found and is a reuse, as before.

Sessions are not audit events (a refresh every quarter of an hour per person would bury the
trail); the server log records each (logger ``hr.signin``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final

from datastore.errors import DatastoreError, InvalidInput
from datastore.kinds import layout
from datastore.kinds.entities import (
    EmployeeStatus,
    IdentityProvider,
    OrganizationStatus,
    RefreshGrant,
    Session,
    SessionStatus,
    SignedOut,
)
from datastore.table import transact, updates
from datastore.table.scoped import Table
from datastore.tenancy.scope import SignInScope
from datastore.values import items
from datastore.values.ids import EmployeeId, SessionId, id_time, new_id_at
from datastore.values.items import Item, timestamp

# A refresh token starts with this: told apart from an API key (hrk_) and a JWT at a glance,
# and findable by secret scanners.
TOKEN_PREFIX: Final = "hrr_"
TOKEN_BYTES: Final = 32
_TOKEN: Final = re.compile(r"hrr_[A-Za-z0-9_-]{43}")

# Why a session ended (its ``endReason``).
SIGNED_OUT: Final = "signOut"
REUSED: Final = "reuse"
REFUSED: Final = "accountInactive"
PROVIDER_GONE: Final = "providerRemoved"


@dataclass(frozen=True, slots=True)
class Lifetimes:
    """How long a session lives: ``idle`` after its last refresh, ``absolute`` after it began;
    and how long after a rotation the replaced token still answers its successor
    (``reuse_leeway``, see the module docstring; zero: never)."""

    idle: timedelta
    absolute: timedelta
    reuse_leeway: timedelta = timedelta(0)


@dataclass(frozen=True, slots=True)
class Rotated:
    """A refresh's outcome: the new token, its grant, and when the rotation happened (the same
    for every caller it answered, so each can be given the same access token too).
    ``replayed``: a racing caller answered within the reuse leeway; nothing was written."""

    grant: RefreshGrant
    token: str
    at: datetime
    replayed: bool = False


class RefreshRefused(DatastoreError):
    """The refresh token signs nobody in; the message says why (for the server log only).

    ``ends`` is why the refusal ends the session too: a token presented after it was used
    (``REUSED``), or an organisation or employee no longer active. ``session`` is the session
    as the refused rotation found it, for a reuse (to tell a race within the leeway).
    """

    def __init__(self, reason: str, *, ends: str | None = None, session: Session | None = None) -> None:
        super().__init__(reason)
        self.ends = ends
        self.session = session

    @property
    def reused(self) -> bool:
        return self.ends == REUSED


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def successor(token: str, key: bytes) -> str:
    """The refresh token a rotation of ``token`` issues: HMAC-SHA256 under the server's ``key``,
    as a token (``hrr_`` and 43 characters). Unguessable without the key; the same for every
    caller that presents ``token`` (module docstring, "Reuse leeway")."""
    digest = hmac.new(key, token.encode("ascii"), hashlib.sha256).digest()
    return TOKEN_PREFIX + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def token_hash(token: str) -> str:
    """The SHA-256 of a well-formed refresh token (lowercase hex); InvalidInput for another text."""
    if not isinstance(token, str) or _TOKEN.fullmatch(token) is None:
        raise InvalidInput("secret", "is not a well-formed refresh token")
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def _lookup_op(grant: RefreshGrant, token: str) -> transact.Op:
    def taken(_old: Item | None) -> RefreshRefused:
        return RefreshRefused("a new refresh token collided with an existing one")  # 2**-256

    return transact.put_new(layout.REFRESH_LOOKUP.item(grant, token_hash=token_hash(token)), taken)


async def start_session(
    table: Table,
    emp_id: EmployeeId,
    lifetimes: Lifetimes,
    *,
    provider: IdentityProvider | None = None,
    now: datetime | None = None,
) -> tuple[Session, str]:
    """A new session for the employee and its first refresh token (returned here, stored hashed).

    ``table`` has the employee's TenantScope; the caller has checked that they may sign in.
    ``provider``: the organisation's own provider whose ID token began it (None for the
    platform's); each refresh checks it is still registered (``rotate``). One transaction:
    the session and its token's lookup item.
    """
    at = now or items.now()
    org_id = table.tenant.org_id
    absolute = at + lifetimes.absolute
    session = Session(
        org_id=org_id,
        emp_id=emp_id,
        # Minted from the start time: a sign-out everywhere compares the two (``rotate``).
        session_id=SessionId(new_id_at(at)),
        status=SessionStatus.ACTIVE,
        generation=0,
        created_at=at,
        refreshed_at=at,
        absolute_expires_at=absolute,
        expires_at=min(absolute, at + lifetimes.idle),
    )
    token = new_token()
    grant = RefreshGrant(
        org_id,
        emp_id,
        session.session_id,
        0,
        absolute,
        provider_issuer=None if provider is None else provider.issuer,
        provider_since=None if provider is None else provider.created_at,
    )

    def taken(_old: Item | None) -> RefreshRefused:
        return RefreshRefused("the new session's id is already taken")

    await table.write([transact.put_new(layout.SESSION.item(session), taken), _lookup_op(grant, token)])
    return session, token


async def find_grant(table: Table, token: str) -> RefreshGrant | None:
    """What a presented refresh token names: one strongly consistent GetItem (``table`` has the
    SignInScope), so the token a rotation just issued is found at once. None for a token that
    is malformed (nothing is sent) or unknown."""
    try:
        key = layout.REFRESH_LOOKUP.key_at(token_hash(token))
    except InvalidInput:
        return None
    item = await table.get(key, consistent=True)
    return None if item is None else layout.REFRESH_LOOKUP.read(item)


def session_started(session_id: SessionId) -> str:
    """When a session began, as stored times are spelt: its id's time part."""
    return timestamp(id_time(session_id))


async def rotate(
    table: Table,
    grant: RefreshGrant,
    token: str,
    lifetimes: Lifetimes,
    *,
    successor_key: bytes,
    now: datetime | None = None,
) -> Rotated:
    """Rotate the session ``grant`` (``token``'s) names to its next refresh token.

    One transaction: the session's update, conditioned on being ACTIVE, on the token's
    generation being its current one, and on neither deadline having passed; the new token's
    lookup item; checks that the organisation and the employee are ACTIVE, that the person
    has not signed out everywhere since the session began and, for a session begun through
    the organisation's own provider (as ``grant`` records it), that the provider's record
    still says so. RefreshRefused says which failed; a
    generation that moved on is a reuse and ends the session, as an organisation or employee
    no longer active does, unless it moved on by this very token's rotation within the reuse
    leeway: then the same successor is answered (``replayed``). No read: the conditions decide.
    """
    at = now or items.now()
    if grant.expires_at <= at:
        raise RefreshRefused("the session reached its absolute lifetime")
    org_id, emp_id = grant.org_id, grant.emp_id
    next_generation = grant.generation + 1
    expires_at = min(grant.expires_at, at + lifetimes.idle)
    new = successor(token, successor_key)
    key = layout.SESSION.key_at(org_id, emp_id, grant.session_id)
    now_epoch = items.n(int(at.timestamp()))

    def session_refused(old: Item | None) -> RefreshRefused:
        if old is None:
            return RefreshRefused("the session is gone")
        current = layout.SESSION.read(old)
        if current.status is not SessionStatus.ACTIVE:
            return RefreshRefused(f"the session ended ({current.end_reason})")
        if current.generation != grant.generation:
            return RefreshRefused(
                f"refresh token generation {grant.generation} was used before (the session is at {current.generation})",
                ends=REUSED,
                session=current,
            )
        return RefreshRefused("the session was idle longer than its idle lifetime")

    active = items.s(SessionStatus.ACTIVE.value)
    ops = [
        transact.update(
            key,
            [
                updates.Set(layout.GENERATION, items.n(next_generation)),
                updates.Set("refreshedAt", items.s(items.timestamp(at))),
                updates.Set(layout.EXPIRES_AT, items.n(int(expires_at.timestamp()))),
            ],
            condition="#status = :active AND #generation = :generation AND #expiresAt > :now",
            names={"#generation": layout.GENERATION, "#expiresAt": layout.EXPIRES_AT, "#status": layout.STATUS},
            values={
                ":active": active,
                ":generation": items.n(grant.generation),
                ":now": now_epoch,
            },
            on_failed=session_refused,
        ),
        _lookup_op(replace(grant, generation=next_generation), new),
        *_account_checks(grant),
    ]
    try:
        await table.write(ops)
    except RefreshRefused as refusal:
        raced = refusal.session
        if (
            refusal.reused
            and raced is not None
            and raced.generation == next_generation
            and lifetimes.reuse_leeway > timedelta(0)
            and at < raced.refreshed_at + lifetimes.reuse_leeway
        ):
            return await _replay(table, grant, new, raced, at)
        if refusal.ends is not None:
            await end_session(table, emp_id, grant.session_id, refusal.ends, now=at)
        raise
    return Rotated(replace(grant, generation=next_generation), new, at)


def _account_checks(grant: RefreshGrant) -> list[transact.Op]:
    """What every refresh checks beside the session itself (``rotate``), atomically with it."""
    org_id, emp_id = grant.org_id, grant.emp_id

    def refused(reason: str, ends: str | None = None) -> transact.FailureHandler:
        return lambda _old: RefreshRefused(reason, ends=ends)

    started = items.s(session_started(grant.session_id))
    checks = [
        transact.check(
            layout.ORGANIZATION.key_at(org_id),
            "#status = :active",
            names={"#status": layout.STATUS},
            values={":active": items.s(OrganizationStatus.ACTIVE.value)},
            on_failed=refused(f"the organisation {org_id} is not active", REFUSED),
        ),
        transact.check(
            layout.EMPLOYEE.key_at(org_id, emp_id),
            "#status = :active",
            names={"#status": layout.STATUS},
            values={":active": items.s(EmployeeStatus.ACTIVE.value)},
            on_failed=refused(f"the employee {emp_id} is not active", REFUSED),
        ),
        transact.check(
            layout.SIGNED_OUT.key_at(org_id, emp_id),
            f"attribute_not_exists(PK) OR {layout.SIGNED_OUT_AT} < :started",
            values={":started": started},
            on_failed=refused("the person signed out everywhere after the session began"),
        ),
    ]
    issuer, since = grant.provider_issuer, grant.provider_since
    if issuer is not None and since is not None:
        checks.append(
            transact.check(
                layout.IDENTITY_PROVIDER.key_at(org_id),
                f"{layout.ISSUER} = :issuer AND {layout.CREATED_AT} = :since"
                f" AND (attribute_not_exists({layout.SESSIONS_ENDED_AT}) OR {layout.SESSIONS_ENDED_AT} < :started)",
                values={
                    ":issuer": items.s(issuer),
                    ":since": items.s(items.timestamp(since)),
                    ":started": started,
                },
                on_failed=refused(
                    f"the identity provider {issuer} the session was begun through was removed, replaced, "
                    "or its sessions were ended",
                    PROVIDER_GONE,
                ),
            )
        )
    return checks


async def _replay(
    table: Table,
    grant: RefreshGrant,
    new: str,
    raced: Session,
    at: datetime,
) -> Rotated:
    """Answer a token rotated moments ago (by a racing caller) with the successor it was
    rotated to, once one transaction of checks confirms it: the session still ACTIVE at the
    successor's generation and rotation time, and the account checks of a rotation. The
    successor's lookup item (so it is the token that rotation issued) is read before, in the
    sign-in scope, the only one that reads lookup items (tenants only put them); it is written
    once and never changed, so the read is as good as a check in the transaction. Writes
    nothing."""
    next_generation = grant.generation + 1
    issued = await find_grant(table.with_scope(SignInScope()), new)
    if issued is None or issued.session_id != grant.session_id or issued.generation != next_generation:
        await end_session(table, grant.emp_id, grant.session_id, REUSED, now=at)
        raise RefreshRefused(
            f"refresh token generation {grant.generation} was used before, not for its derived successor",
            ends=REUSED,
        )

    def moved_on(old: Item | None) -> RefreshRefused:
        if old is not None and layout.SESSION.read(old).status is SessionStatus.ACTIVE:
            return RefreshRefused(
                f"refresh token generation {grant.generation} was used before and its successor too", ends=REUSED
            )
        return RefreshRefused("the session ended")

    ops = [
        transact.check(
            layout.SESSION.key_at(grant.org_id, grant.emp_id, grant.session_id),
            "#status = :active AND #generation = :next AND #refreshedAt = :rotated AND #expiresAt > :now",
            names={
                "#status": layout.STATUS,
                "#generation": layout.GENERATION,
                "#refreshedAt": "refreshedAt",
                "#expiresAt": layout.EXPIRES_AT,
            },
            values={
                ":active": items.s(SessionStatus.ACTIVE.value),
                ":next": items.n(next_generation),
                ":rotated": items.s(items.timestamp(raced.refreshed_at)),
                ":now": items.n(int(at.timestamp())),
            },
            on_failed=moved_on,
        ),
        *_account_checks(grant),
    ]
    try:
        await table.write(ops)
    except RefreshRefused as refusal:
        if refusal.ends is not None:
            await end_session(table, grant.emp_id, grant.session_id, refusal.ends, now=at)
        raise
    return Rotated(replace(grant, generation=next_generation), new, raced.refreshed_at, replayed=True)


async def end_session(
    table: Table, emp_id: EmployeeId, session_id: SessionId, reason: str, *, now: datetime | None = None
) -> bool:
    """End one ACTIVE session of the employee (``table``'s tenant): its refresh tokens stop
    working. False when it was already over or is not theirs. One conditional UpdateItem."""
    at = now or items.now()
    op = transact.update(
        layout.SESSION.key_at(table.tenant.org_id, emp_id, session_id),
        [
            updates.Set(layout.STATUS, items.s(SessionStatus.ENDED.value)),
            updates.Set("endedAt", items.s(items.timestamp(at))),
            updates.Set("endReason", items.s(reason)),
        ],
        condition="#status = :active",
        names={"#status": layout.STATUS},
        values={":active": items.s(SessionStatus.ACTIVE.value)},
        on_failed=lambda _old: RefreshRefused("the session is not active"),
    )
    try:
        await table.write([op])
    except RefreshRefused:
        return False
    return True


async def sign_out_everywhere(table: Table, emp_id: EmployeeId, *, now: datetime | None = None) -> SignedOut:
    """End every session the employee has begun until now: one PutItem of their sign-out mark,
    however many sessions they have (each is refused at its next refresh)."""
    mark = SignedOut(table.tenant.org_id, emp_id, now or items.now())
    await table.write([transact.put(layout.SIGNED_OUT.item(mark))])
    return mark


async def get_session(table: Table, emp_id: EmployeeId, session_id: SessionId) -> Session | None:
    item = await table.get(layout.SESSION.key_at(table.tenant.org_id, emp_id, session_id), consistent=True)
    return None if item is None else layout.SESSION.read(item)


async def list_sessions(table: Table, emp_id: EmployeeId, *, limit: int = 100) -> list[Session]:
    """The employee's sessions, oldest first, ended ones included until their TTL removes them
    (tests and operators; one Query)."""
    result = await table.query(
        layout.SESSION.partition(table.tenant.org_id, emp_id), sk_prefix=layout.SESSION.sort_prefix, limit=limit
    )
    return [layout.SESSION.read(item) for item in result.items]


async def signed_out(table: Table, emp_id: EmployeeId) -> SignedOut | None:
    item = await table.get(layout.SIGNED_OUT.key_at(table.tenant.org_id, emp_id), consistent=True)
    return None if item is None else layout.SIGNED_OUT.read(item)


async def signed_in_until(
    table: Table, emp_id: EmployeeId, session_id: SessionId, *, now: datetime | None = None
) -> datetime | None:
    """Until when the session stays signed in unless it is refreshed (its ``expires_at``); None
    when it is over: ended (signed out, a reused token), expired, or begun before its person
    signed out everywhere (as ``rotate`` decides). Two strongly consistent GetItems."""
    at = now or items.now()
    session = await get_session(table, emp_id, session_id)
    if session is None or session.status is not SessionStatus.ACTIVE or session.expires_at <= at:
        return None
    mark = await signed_out(table, emp_id)
    if mark is not None and not timestamp(mark.at) < session_started(session_id):
        return None
    return session.expires_at

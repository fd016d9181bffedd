"""When a live connection ends by itself: its lifetime, or its caller's credential running out.

One rule for both transports a process holds open (websocket.py, over_http.py). A connection
lives at most SUBSCRIPTION_LIFETIME_SECONDS (TIMED_OUT). A token from sign-in runs out with
its session, not at its own expiry (every 15 minutes by default, when a client refreshes it
for HTTP): the caller's standing is checked at every delivery anyway, and the session's end
(sign-out, a reused refresh token, signing out everywhere) closes the connection at once
(hub.py). So at the token's expiry the session is read; while it is signed in the connection
goes on, and the session is read again when it would expire (a refresh moves that). Any
other token (without a session) ends the connection FORBIDDEN at its expiry.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

from datastore.errors import DatastoreError
from datastore.signin import sessions
from datastore.tenancy.scope import TenantScope
from datastore.values.items import timestamp
from graphql_api.execution.errors import ApiError
from graphql_api.request.principal import Principal
from graphql_api.request.services import Services
from graphql_api.request.session import Deadline, RequestSession
from graphql_api.subscriptions.closing import Close, Closed
from graphql_api.subscriptions.connection import LiveConnection


async def until_over(services: Services, connection: LiveConnection, *, again: str) -> None:
    """Close ``connection`` when it is over; ``again`` says how to go on (in the close's reason)."""
    principal = connection.principal
    lifetime = services.settings.subscription_lifetime_seconds
    ends = connection.opened + lifetime
    expires = principal.expires_at
    while expires is not None and _monotonic_at(expires) < ends:
        await asyncio.sleep(max(0.0, _monotonic_at(expires) - time.monotonic()))
        if connection.closed is not None:
            return
        try:
            expires = await signed_in_until(services, principal, again)
        except Closed as over:
            connection.close(over)
            return
    await asyncio.sleep(max(0.0, ends - time.monotonic()))
    connection.close(Closed(Close.TIMED_OUT, f"the connection reached its {lifetime:g} s lifetime: {again}"))


async def signed_in_until(services: Services, principal: Principal, again: str) -> float:
    """Until when (epoch seconds) ``principal``'s session is signed in; Closed when it is not,
    or when the credential has no session (its token expired)."""
    employee, session_id, org_id = principal.employee_id, principal.session_id, principal.org_id
    if employee is None or session_id is None or org_id is None:
        raise Closed(Close.FORBIDDEN, f"the token expired: {again} with a fresh one")
    session = RequestSession(services, principal, Deadline.after(services.settings.request_timeout_seconds))
    table = services.datastore.table(TenantScope(org_id))
    try:
        until = await session.run(sessions.signed_in_until, table, employee, session_id)
    except (DatastoreError, ApiError):
        raise Closed(Close.UNAVAILABLE, f"the session could not be checked: {again} shortly") from None
    finally:
        session.end()
    if until is None:
        raise Closed(Close.FORBIDDEN, "the session ended: sign in again")
    return until.timestamp()


def signed_out_by(principal: Principal, emp_id: object, at: object) -> bool:
    """Whether ``principal`` is of a session of ``emp_id`` begun by ``at``: a sign-out everywhere
    at ``at`` ends those, as a refresh decides (datastore/signin/sessions.py)."""
    if principal.api_key or principal.session_id is None or principal.subject != emp_id:
        return False
    return isinstance(at, datetime) and not timestamp(at) < sessions.session_started(principal.session_id)


def _monotonic_at(epoch_seconds: float) -> float:
    """The monotonic clock's reading at the wall-clock time ``epoch_seconds``."""
    return time.monotonic() + (epoch_seconds - time.time())

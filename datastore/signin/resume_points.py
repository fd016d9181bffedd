"""Where a sign-in session's live subscriptions got to, kept for any process to resume from.

A server process remembers, for each session's subscription, the cursor of the last event it
wrote to the socket (graphql_api/subscriptions/resumes.py); a reconnect can reach another
worker or host, or a new process after a restart. So when a subscription's connection ends,
its cursor is saved here (on AWS, from the subscription's item: graphql_api/subscriptions/
gateway.py), one item per session and subscription:
``ORG#<org>#SESSION#<emp> / RESUME#<session>#<sha256>``, beside the person's sessions (the
hash names the subscription's field and arguments, of any length, in a bounded key). The
item lives for the replay window: a reconnect later than that starts from now anyway, so
its ``expiresAt`` is the table's TTL, and a read ignores one past it (TTL deletes late).

One PutItem per subscription when a connection ends, one strongly consistent GetItem when a
session subscribes again without a cursor, one DeleteItem when the client completes it. A
kind written from its first release: no item of an earlier layout to migrate.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from datastore.kinds import layout
from datastore.kinds.bookkeeping import ResumePoint
from datastore.table import transact
from datastore.table.scoped import Table


def subscription_hash(subscription: str) -> str:
    """The key's name for a subscription (its field and arguments, as the API names them)."""
    return hashlib.sha256(subscription.encode()).hexdigest()


async def save(table: Table, point: ResumePoint) -> None:
    """Replace the session's point for the subscription (``table``: the organisation's scope)."""
    await table.write([transact.put(layout.RESUME_POINT.item(point))])


async def find(table: Table, emp_id: str, session_id: str, subscription: str, now: datetime) -> ResumePoint | None:
    """The session's point for ``subscription`` (its hash), unless it expired by ``now``."""
    key = layout.RESUME_POINT.key_at(table.tenant.org_id, emp_id, session_id, subscription)
    item = await table.get(key, consistent=True)
    if item is None:
        return None
    point: ResumePoint = layout.RESUME_POINT.read(item)
    return point if point.expires_at > now else None


async def forget(table: Table, emp_id: str, session_id: str, subscription: str) -> None:
    """Delete the session's point for ``subscription`` (its hash), if there is one."""
    await table.write(
        [transact.delete(layout.RESUME_POINT.key_at(table.tenant.org_id, emp_id, session_id, subscription))]
    )

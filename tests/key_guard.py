"""The key guard's rule: a DynamoDB request stays inside one named partition space.

Each request's partition keys (table or index) lie in one organisation's ``ORG#<orgId>``
space, or on a named path: identity ``EMAIL#`` items, email domain ``DOMAIN#`` markers, the
platform's ``ORGS`` list (read on GSI1 only), the organisations with webhook endpoints
(``WEBHOOKS``, on GSI1 too), API key lookup items (``APIKEY#<sha256>``),
identity provider clients (``ISSUER#<issuer>``), refresh token lookup items
(``REFRESH#<sha256>``), the table's data-layout items (``LAYOUT``), a stream reader's lease
and checkpoints (``FEED#``), a WebSocket connection's lookup on AWS (``WSCONN#``),
an organisation's lifecycle records (``LIFECYCLE#<org>``).
Persisted GraphQL documents are in their organisation's space (``ORG#<org>#PQ#<slot>``).
Requests of unkeyed operations (Scan, PartiQL statements) are violations: no partition key
bounds them. Control-plane calls name no item and pass.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Final

from datastore.aws.calls import Call, CallLog
from datastore.tenancy import keys
from datastore.tenancy.keys import org_id_of

MODULE: Final = "test_key_guard.py"

# BatchWriteItem: the API never sends one; a restore does (datastore/lifecycle/restore.py), and
# test fixtures seed bulk data with it.
KEYED_OPERATIONS: Final = frozenset(
    {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "TransactWriteItems", "BatchWriteItem"}
)
TABLE_OPERATIONS: Final = frozenset(
    {
        "CreateTable",
        "DescribeTable",
        "DeleteTable",
        "ListTables",
        "UpdateTable",
        "UpdateTimeToLive",
        "DescribeTimeToLive",
    }
)


def batch_write_keys(call: Call) -> list[str]:
    found: list[str] = []
    for requests in call.params.get("RequestItems", {}).values():
        for request in requests:
            body = request.get("PutRequest", {}).get("Item") or request.get("DeleteRequest", {}).get("Key") or {}
            value = body.get(keys.PK, {}).get("S")
            if value is not None:
                found.append(value)
    return found


def named_space(partition_key: str) -> bool:
    """An organisation's own space, or one of the named paths outside every organisation."""
    return (
        org_id_of(partition_key) is not None
        or keys.is_identity_pk(partition_key)
        or keys.is_domain_pk(partition_key)
        or partition_key == keys.ORGS_PK
        or partition_key == keys.WEBHOOKS_PK
        or keys.is_api_key_lookup_pk(partition_key)
        or keys.is_issuer_pk(partition_key)
        or keys.is_refresh_lookup_pk(partition_key)
        or keys.is_layout_pk(partition_key)
        or keys.is_feed_pk(partition_key)
        or keys.is_ws_connection_pk(partition_key)
        or keys.is_lifecycle_pk(partition_key)
    )


def violations(call: Call) -> list[str]:
    if call.operation in TABLE_OPERATIONS:
        return []
    if call.operation not in KEYED_OPERATIONS:
        return [f"{call.operation}: not a keyed operation, so no partition key bounds it"]
    partition_keys = call.partition_keys() if call.operation != "BatchWriteItem" else batch_write_keys(call)
    if not partition_keys:
        return [f"{call.operation}: no partition key"]
    found = [
        f"{call.operation}: {pk!r} is outside every named partition space"
        for pk in partition_keys
        if not named_space(pk)
    ]
    tenants = {org for org in map(org_id_of, partition_keys) if org is not None}
    if len(tenants) > 1:
        found.append(f"{call.operation}: one request spans organisations {sorted(tenants)}")
    if call.operation == "Query" and keys.ORGS_PK in partition_keys and call.params.get("IndexName") != keys.GSI1:
        found.append("Query: the ORGS list is read only through GSI1")
    return found


@dataclass
class Findings:
    """Requests checked so far, and what was wrong with them (by test id)."""

    log: CallLog | None = None
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def check(self, test_id: str) -> None:
        """Check the requests recorded since the last check, then forget them (memory)."""
        if self.log is None:
            return
        with self.log._lock:
            recorded = list(self.log.calls)
            self.log.calls.clear()
        with self._lock:
            self.checked += len(recorded)
            self.problems.extend(f"{test_id}: {p}" for call in recorded for p in violations(call))

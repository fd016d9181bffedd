"""Idempotent retries: a write under an idempotency key happens once; a retry replays it.

A keyed write stores a record (``ORG#<org>#IDEM#<key>``) in its own transaction, holding a
fingerprint of the request and the write's result, kept for ``RECORD_TTL`` (the table's TTL
removes it later). Before doing any work a keyed write reads the record with one GetItem:

* no live record: the write runs; the record's put is conditional, so a concurrent first
  attempt that commits in between makes this one fail and replay instead;
* same fingerprint: the stored result is returned and nothing is written;
* another fingerprint (another operation, input or caller): IdempotencyMismatch.

Attempts of one request may run at once (a client's retry racing its first attempt). One
that found no record may then read the state another attempt has just committed: the move
done already (an answer of "nothing to do"), the version moved on (a CONFLICT). Such an
answer is computed from the first attempt's effects, not the request, so an attempt that
ends without writing the record (an answer without a write, or a refusal) reads the record
again and replays it when it is there now.

The transaction also carries a ClientRequestToken derived from the key and the fingerprint,
so the client's resends of one transaction (``datastore/aws/retries.py``: after a lost answer
too, since the token makes it idempotent) are deduplicated by DynamoDB itself; a concurrent
attempt under the same token is refused by DynamoDB and replays, or, while the first
attempt's transaction has not committed, is InProgress: retried with the same key, it replays.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Final, TypeVar

from datastore.errors import AlreadyWritten, Conflict, IdempotencyMismatch, InProgress, InvalidInput, NotFound
from datastore.kinds import layout
from datastore.kinds.bookkeeping import IdempotencyRecord
from datastore.table import transact
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.values import items
from datastore.values.ids import OrgId
from datastore.values.items import Item

T = TypeVar("T")

RECORD_TTL: Final = timedelta(hours=24)
# TransactWriteItems accepts a ClientRequestToken of at most 36 characters.
TOKEN_LENGTH: Final = 36


@dataclass(slots=True)
class Attempt:
    """What one attempt did: whether its transaction wrote the record (datastore/writes/envelope.py)."""

    recorded: bool = False


@dataclass(frozen=True, slots=True)
class IdempotencyRequest:
    org_id: OrgId
    key: str
    operation: str
    fingerprint: str
    attempt: Attempt = field(default_factory=Attempt, compare=False, repr=False)

    @property
    def record_key(self) -> keys.Key:
        return layout.IDEMPOTENCY.key_at(self.org_id, self.key)

    @property
    def token(self) -> str:
        """The ClientRequestToken: one per key and request, so only true resends share it."""
        digest = hashlib.sha256(f"{self.org_id}\n{self.key}\n{self.fingerprint}".encode())
        return digest.hexdigest()[:TOKEN_LENGTH]


def fingerprint(operation: str, actor_id: str | None, inputs: Mapping[str, object]) -> str:
    """A hash of the operation, its caller and its input in canonical form."""
    canonical = json.dumps(
        {"operation": operation, "actor": actor_id, "input": inputs},
        sort_keys=True,
        separators=(",", ":"),
        default=_canonical,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _canonical(value: object) -> object:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return items.timestamp(value)
    raise TypeError(f"no canonical form for {type(value).__name__}")


def prepare(
    org_id: OrgId,
    actor_id: str | None,
    operation: str,
    key: str | None,
    inputs: Mapping[str, object],
) -> IdempotencyRequest | None:
    """The request a keyed write of ``actor_id`` runs under; None when the caller sent no key.

    ``inputs`` names each value as the first release of the write did (``employeeId``,
    ``firstName``): the names are hashed into every stored record, so a retry sent across an
    upgrade must hash alike. They are the fingerprint's own and frozen, not attribute names
    (tests/datastore/layout_1.json holds each write's fingerprint).
    """
    if key is None:
        return None
    key = keys.parse_idempotency_key(key)
    digest = fingerprint(operation, actor_id, inputs)
    return IdempotencyRequest(org_id, key, operation, digest)


def record_op(request: IdempotencyRequest, result: Item, at: datetime) -> transact.Op:
    """The record's put: new, or replacing one whose time is up but TTL has not removed."""
    record = IdempotencyRecord(
        org_id=request.org_id,
        key=request.key,
        operation=request.operation,
        fingerprint=request.fingerprint,
        result=result,
        created_at=at,
        expires_at=at + RECORD_TTL,
    )
    return transact.put(
        layout.IDEMPOTENCY.item(record),
        condition="attribute_not_exists(PK) OR #expires < :now",
        names={"#expires": layout.EXPIRES_AT},
        values={":now": items.n(int(at.timestamp()))},
        on_failed=AlreadyWritten,
    )


async def run(
    table: Table,
    request: IdempotencyRequest | None,
    decode: Callable[[Item], T],
    perform: Callable[[], Awaitable[T]],
) -> T:
    """``perform()`` once per idempotency key; a retry gets the first result decoded."""
    if request is None:
        return await perform()
    record = await _live_record(table, request)
    if record is not None:
        return decode(_replay(record, request))
    try:
        result = await perform()
    except AlreadyWritten as written:
        record = written.record if written.record is not None else await _live_record(table, request)
        if record is None:
            raise InProgress() from None
        return decode(_replay(record, request))
    except (Conflict, NotFound, InvalidInput):
        # Refused on state another attempt of this request may have just committed.
        if (record := await _live_record(table, request)) is None:
            raise
        return decode(_replay(record, request))
    if not request.attempt.recorded and (record := await _live_record(table, request)) is not None:
        # Answered without a write, maybe because another attempt's write had just landed.
        return decode(_replay(record, request))
    return result


async def _live_record(table: Table, request: IdempotencyRequest) -> Item | None:
    record = await table.get(request.record_key, consistent=True)
    if record is None or _record(record, request).expires_at < _whole_second(items.now()):
        return None
    return record


def _whole_second(at: datetime) -> datetime:
    """``at`` to the second before it, as an expiry is stored (epoch seconds)."""
    return at.replace(microsecond=0)


def _record(item: Item, request: IdempotencyRequest) -> IdempotencyRecord:
    return layout.IDEMPOTENCY.read(item, key=request.key)


def _replay(record: Item, request: IdempotencyRequest) -> Item:
    found = _record(record, request)
    if found.fingerprint != request.fingerprint:
        raise IdempotencyMismatch()
    return found.result

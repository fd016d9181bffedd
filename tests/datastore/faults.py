"""Faults DynamoDB Local never produces, injected at the client boundary.

DynamoDB Local neither reports transaction conflicts nor throttles, so tests plan them here:
a ``before-call`` hook on TransactWriteItems answers with the error response DynamoDB
would send, before any request leaves the client. The calls are still recorded by
``datastore.calls`` (whose hooks run around this one), so tests count the attempts.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

TRANSACTION_CANCELED: Final = "TransactionCanceledException"
TRANSACTION_CONFLICT: Final = "TransactionConflict"
THROTTLING_ERROR: Final = "ThrottlingError"
PROVISIONED_THROUGHPUT_EXCEEDED: Final = "ProvisionedThroughputExceededException"

_EVENT: Final = "before-call.dynamodb.TransactWriteItems"
_HOOK_ID: Final = "hr-tests-transact-faults"


@dataclass(frozen=True)
class _HttpResponse:
    status_code: int
    headers: dict[str, str]


class TransactFaults:
    """Answers the next TransactWriteItems calls with planned refusals (thread-safe).

    ``cancel(reason, times)`` cancels that many calls with ``reason`` on their last item, the
    way DynamoDB reports a conflict or throttled item; ``times=None`` cancels every call.
    ``every(n)`` cancels each n-th call instead (for concurrent runs). ``refuse(code)`` fails
    the next call as a whole request.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._remaining: int | None = 0
        self._every: int | None = None
        self._seen = 0
        self._request_error: str | None = None
        self.injected = 0

    def cancel(self, reason: str = TRANSACTION_CONFLICT, times: int | None = 1) -> None:
        with self._lock:
            self._reason, self._remaining, self._every = reason, times, None

    def every(self, n: int, reason: str = TRANSACTION_CONFLICT) -> None:
        with self._lock:
            self._reason, self._remaining, self._every, self._seen = reason, None, n, 0

    def refuse(self, code: str) -> None:
        with self._lock:
            self._request_error = code

    def clear(self) -> None:
        with self._lock:
            self._reason, self._remaining, self._every, self._request_error = None, 0, None, None

    def __call__(self, params: dict[str, Any], **_: Any) -> tuple[_HttpResponse, dict[str, Any]] | None:
        with self._lock:
            if self._request_error is not None:
                code, self._request_error = self._request_error, None
                self.injected += 1
                return _error(code, "injected by the test")
            if self._reason is None:
                return None
            if self._every is not None:
                self._seen += 1
                if self._seen % self._every:
                    return None
            elif self._remaining is not None:
                if self._remaining == 0:
                    return None
                self._remaining -= 1
            self.injected += 1
            reason = self._reason
        count = _item_count(params)
        reasons = [{"Code": "None"}] * (count - 1) + [{"Code": reason, "Message": "injected"}]
        response = _error(
            TRANSACTION_CANCELED,
            "Transaction cancelled, please refer cancellation reasons for specific reasons",
        )
        response[1]["CancellationReasons"] = reasons
        return response


def _error(code: str, message: str) -> tuple[_HttpResponse, dict[str, Any]]:
    parsed: dict[str, Any] = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}, "RetryAttempts": 0},
    }
    return _HttpResponse(400, {}), parsed


def _item_count(params: dict[str, Any]) -> int:
    body = params.get("body")
    try:
        request = json.loads(body) if isinstance(body, bytes | str) else {}
    except ValueError:
        request = {}
    return max(1, len(request.get("TransactItems", [])))


@contextmanager
def injected(client: DynamoDBClient) -> Iterator[TransactFaults]:
    faults = TransactFaults()
    # The stubs type handlers as returning None; a before-call handler's answer replaces the call.
    client.meta.events.register(_EVENT, cast(Callable[..., None], faults), unique_id=_HOOK_ID)
    try:
        yield faults
    finally:
        client.meta.events.unregister(_EVENT, unique_id=_HOOK_ID)

"""Faults DynamoDB Local never produces, injected at the client boundary.

DynamoDB Local neither reports transaction conflicts nor throttles, so tests plan them here,
in the send hooks of the data plane's client (``AsyncDynamo.hooks``, datastore/aws/exchange.py):
a hook sees each attempt, signed, before it is sent, and answers with the error response
DynamoDB would send, or raises the transport failure the connection would meet. aiodynamo
then retries, times out and parses the answer as it would the real thing. The calls are
still recorded by ``datastore.aws.calls`` (around every attempt), so tests count them.

The ``AsyncDynamo`` to pass is the one every Datastore and Table of the session's settings
shares (the ``dynamo`` fixture): the in-process servers' calls meet the faults too.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from aiodynamo.http.types import Request, Response

from datastore.aws.client import AsyncDynamo
from datastore.aws.connections import NoAnswer, NotSent
from datastore.aws.exchange import SendHook

TRANSACTION_CANCELED: Final = "TransactionCanceledException"
TRANSACTION_CONFLICT: Final = "TransactionConflict"
THROTTLING_ERROR: Final = "ThrottlingError"
PROVISIONED_THROUGHPUT_EXCEEDED: Final = "ProvisionedThroughputExceededException"

_TRANSACT: Final = "TransactWriteItems"
_ERROR_TYPE: Final = "com.amazonaws.dynamodb.v20120810#"


class TransactFaults:
    """Answers the next TransactWriteItems attempts with planned refusals (thread-safe).

    ``cancel(reason, times)`` cancels that many attempts with ``reason`` on their last item,
    the way DynamoDB reports a conflict or throttled item; ``times=None`` cancels every one.
    ``every(n)`` cancels each n-th attempt instead (for concurrent runs). ``refuse(code)``
    fails every attempt as a whole request with DynamoDB's error ``code`` until ``clear``
    (the client retries a throttling answer: refusing one attempt would be refusing none).
    ``sent`` holds the body of every TransactWriteItems attempt seen, answered here or not:
    the attempts at the client boundary, where the call log records each call once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._remaining: int | None = 0
        self._every: int | None = None
        self._seen = 0
        self._request_error: str | None = None
        self.injected = 0
        self.sent: list[bytes] = []

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

    async def __call__(self, request: Request) -> Response | None:
        """The client's send hook: every attempt passes here before it is sent."""
        if operation_of(request) != _TRANSACT:
            return None
        with self._lock:
            self.sent.append(request.body or b"")
            if self._request_error is not None:
                self.injected += 1
                return error_answer(self._request_error, "injected by the test")
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
        count = _item_count(request)
        # aiodynamo reads a Message from every reason but the "None" ones, as DynamoDB sends them.
        reasons: list[dict[str, str]] = [{"Code": "None"}] * (count - 1) + [{"Code": reason, "Message": "injected"}]
        return error_answer(
            TRANSACTION_CANCELED,
            "Transaction cancelled, please refer cancellation reasons for specific reasons",
            CancellationReasons=reasons,
        )


def error_answer(code: str, message: str, **body: Any) -> Response:
    """DynamoDB's 400 answer with error ``code`` (its JSON protocol's ``__type``)."""
    return Response(400, json.dumps({"__type": _ERROR_TYPE + code, "message": message, **body}).encode())


def _error(code: str, message: str) -> tuple[Any, dict[str, Any]]:
    """A botocore ``before-call`` handler's answer: the boto3 client's error ``code`` (the
    stream reads' faults, tests/datastore/feed/conftest.py)."""
    parsed: dict[str, Any] = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}, "RetryAttempts": 0},
    }
    return _HttpResponse(400, {}), parsed


class _HttpResponse:
    def __init__(self, status_code: int, headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.headers = headers


def _item_count(request: Request) -> int:
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        body = {}
    return max(1, len(body.get("TransactItems", [])) if isinstance(body, dict) else 1)


@contextmanager
def injected(dynamo: AsyncDynamo) -> Iterator[TransactFaults]:
    faults = TransactFaults()
    with on_send(dynamo, faults):
        yield faults


# --- faults of any call, at the HTTP boundary ---------------------------------------------

# What a DynamoDB call can meet on the way, each raised or answered in the send hook so the
# client's own retries, timeouts and error parsing handle it as they would the real thing: a
# refused connection, a read that times out, a 400 throttling answer or a 500 on every
# attempt, and an answer that never comes, which ends as a read timeout.
CONNECTION_ERROR: Final = "connection-error"
READ_TIMEOUT: Final = "read-timeout"
THROTTLED: Final = "throttled"
SERVER_ERROR: Final = "http-500"
NO_ANSWER: Final = "no-answer"
CALL_FAULTS: Final = (CONNECTION_ERROR, READ_TIMEOUT, THROTTLED, SERVER_ERROR, NO_ANSWER)


class CallFaults:
    """Fails every DynamoDB request with ``fault`` while set (thread-safe counter); the
    requests first take the faults in ``planned``, one each (the attempts of one call, say)."""

    def __init__(self, hang_seconds: float) -> None:
        self._lock = threading.Lock()
        self.fault: str | None = None
        self.planned: list[str] = []
        self.hang_seconds = hang_seconds
        self.injected = 0

    def _take(self) -> str | None:
        with self._lock:
            fault = self.planned.pop(0) if self.planned else self.fault
            if fault is not None:
                self.injected += 1
            return fault

    async def on_send(self, request: Request) -> Response | None:
        """The client's send hook: each attempt meets the fault, in its transport's words."""
        fault = self._take()
        if fault is None:
            return None
        if fault == CONNECTION_ERROR:
            raise NotSent("injected: connection refused")
        if fault == READ_TIMEOUT:
            raise NoAnswer("injected: read timeout")
        if fault == NO_ANSWER:
            await asyncio.sleep(self.hang_seconds)  # the read timeout the connection would wait out
            raise NoAnswer("injected: no answer")
        status, body = _fault_answer(fault)
        return Response(status, json.dumps(body).encode())


def _fault_answer(fault: str) -> tuple[int, dict[str, str]]:
    if fault == THROTTLED:
        return 400, {"__type": _ERROR_TYPE + "ThrottlingException", "message": "Rate exceeded"}
    return 500, {"__type": _ERROR_TYPE + "InternalServerError", "message": "Internal error"}


@contextmanager
def failing_calls(dynamo: AsyncDynamo, hang_seconds: float = 1.0) -> Iterator[CallFaults]:
    """Fails the calls of ``dynamo`` (every Table and Datastore on its settings) as set."""
    faults = CallFaults(hang_seconds)
    with on_send(dynamo, faults.on_send):
        yield faults


@contextmanager
def on_send(dynamo: AsyncDynamo, hook: SendHook) -> Iterator[None]:
    """``hook`` sees each attempt of ``dynamo``'s calls before it is sent (it may answer in
    DynamoDB's place, or raise a transport failure)."""
    dynamo.hooks.add(hook)
    try:
        yield
    finally:
        dynamo.hooks.remove(hook)


def operation_of(request: Request) -> str:
    """The DynamoDB operation of a signed request (its ``X-Amz-Target``)."""
    return (request.headers or {}).get("X-Amz-Target", "").rsplit(".", 1)[-1]

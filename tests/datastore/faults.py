"""Faults DynamoDB Local never produces, injected at the client boundary.

DynamoDB Local neither reports transaction conflicts nor throttles, so tests plan them here:
a ``before-call`` hook on TransactWriteItems answers with the error response DynamoDB
would send, before any request leaves the client. The calls are still recorded by
``datastore.calls`` (whose hooks run around this one), so tests count the attempts.

A DynamoDB client has two sides: the boto3 client (writes, sign-in, the CLI), whose faults go
in botocore's hooks, and the event loop's client beside it (the read path,
datastore/async_client.py), whose faults go in its send hooks (``on_send``). ``failing_calls``
fails both alike.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from aiodynamo.http.types import Request, Response
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from datastore.async_client import AsyncDynamo
from datastore.async_http import SendHook
from datastore.http_connections import NoAnswer, NotSent

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


# --- faults of any call, at the HTTP boundary ---------------------------------------------

# What a DynamoDB call can meet on the way: each is injected in botocore's ``before-send``
# hook, so botocore's own retries, timeouts and error parsing handle it as they would the
# real thing (a refused connection, a read that times out, a 400 throttling answer or a 500
# on every attempt, and an answer that never comes, which ends as a read timeout).
CONNECTION_ERROR: Final = "connection-error"
READ_TIMEOUT: Final = "read-timeout"
THROTTLED: Final = "throttled"
SERVER_ERROR: Final = "http-500"
NO_ANSWER: Final = "no-answer"
CALL_FAULTS: Final = (CONNECTION_ERROR, READ_TIMEOUT, THROTTLED, SERVER_ERROR, NO_ANSWER)

_SEND_EVENT: Final = "before-send.dynamodb"
_SEND_HOOK_ID: Final = "hr-tests-call-faults"


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


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

    def __call__(self, request: Any, **_: Any) -> Any:
        """botocore's ``before-send``: the boto3 client's attempts."""
        fault = self._take()
        if fault is None:
            return None
        url = str(request.url)
        if fault == CONNECTION_ERROR:
            raise EndpointConnectionError(endpoint_url=url)
        if fault == READ_TIMEOUT:
            raise ReadTimeoutError(endpoint_url=url)
        if fault == NO_ANSWER:
            time.sleep(self.hang_seconds)  # the read timeout botocore would wait out
            raise ReadTimeoutError(endpoint_url=url)
        status, body = _fault_answer(fault)
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(url, status, headers, _Raw(json.dumps(body).encode()))

    async def on_send(self, request: Request) -> Response | None:
        """The event loop's client's attempts: the same faults, in its transport's words."""
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
        return 400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException", "message": "Rate exceeded"}
    return 500, {"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "Internal error"}


@contextmanager
def failing_calls(client: DynamoDBClient, hang_seconds: float = 1.0) -> Iterator[CallFaults]:
    """Fails the calls of both sides of ``client`` (its boto3 attempts and its event loop's)."""
    faults = CallFaults(hang_seconds)
    client.meta.events.register(_SEND_EVENT, cast(Callable[..., None], faults), unique_id=_SEND_HOOK_ID)
    try:
        with on_send(client, faults.on_send):
            yield faults
    finally:
        client.meta.events.unregister(_SEND_EVENT, unique_id=_SEND_HOOK_ID)


@contextmanager
def on_send(client: DynamoDBClient, hook: SendHook) -> Iterator[None]:
    """``hook`` sees each attempt of the event loop's client beside ``client`` before it is sent
    (it may answer in DynamoDB's place, or raise a transport failure)."""
    hooks = AsyncDynamo.beside(client).hooks
    hooks.add(hook)
    try:
        yield
    finally:
        hooks.remove(hook)


def operation_of(request: Request) -> str:
    """The DynamoDB operation of a signed request (its ``X-Amz-Target``)."""
    return (request.headers or {}).get("X-Amz-Target", "").rsplit(".", 1)[-1]

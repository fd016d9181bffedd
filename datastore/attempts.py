"""Whether any attempt of a DynamoDB call may have reached DynamoDB, not only the last.

botocore retries an attempt that failed on the way (a read timeout, a dropped connection, a
5xx) and raises only the last attempt's error. That error speaks for its own attempt alone:
a refused connection on the second attempt says nothing reached DynamoDB *then*, while the
first, which timed out waiting for its answer, may have been applied. A write reported as
certainly not applied invites the client to send it again under a new idempotency key.

So the client keeps a note per call, in the calling thread's context, where botocore runs
its retries: ``before-call`` (once per call) clears it, and ``needs-retry`` (after every
attempt) marks it when that attempt may have reached DynamoDB. ``Table`` reads it
(``reached``) when it reports a failed write, right after the call, in the same thread.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_UNIQUE_ID: Final = "hr-attempts"
_reached: ContextVar[bool] = ContextVar("dynamodb_attempt_reached", default=False)


def install(client: DynamoDBClient) -> DynamoDBClient:
    """Register the note-taking hooks on ``client`` (idempotent)."""
    events = client.meta.events
    events.register("before-call.dynamodb", _clear, unique_id=f"{_UNIQUE_ID}-clear")
    events.register("needs-retry.dynamodb", _note, unique_id=_UNIQUE_ID)
    return client


def reached() -> bool:
    """Whether an attempt of the last call made in this context may have reached DynamoDB."""
    return _reached.get()


def _clear(**_: Any) -> None:
    _reached.set(False)


def _note(caught_exception: Exception | None = None, response: Any = None, **_: Any) -> None:
    if caught_exception is not None:
        # Only a connection never made proves its request was not sent.
        if not isinstance(caught_exception, EndpointConnectionError | ConnectTimeoutError):
            _reached.set(True)
    elif response is not None and response[0].status_code >= 500:
        _reached.set(True)  # DynamoDB failed while handling it: it may have been applied

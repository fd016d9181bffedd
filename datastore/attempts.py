"""Whether any attempt of a DynamoDB call may have reached DynamoDB, not only the last.

botocore retries an attempt that failed on the way (a read timeout, a dropped connection, a
5xx) and raises only the last attempt's error. That error speaks for its own attempt alone:
a refused connection on the second attempt says nothing reached DynamoDB *then*, while the
first, which timed out waiting for its answer, may have been applied. A write reported as
certainly not applied invites the client to send it again under a new idempotency key.

So a ``needs-retry`` hook, which botocore emits after every attempt in the calling thread,
notes any attempt that may have reached DynamoDB, and ``Table`` reads the note for its
writes (``watching``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_UNIQUE_ID: Final = "hr-attempts"
# Set within ``watching`` by the hook; botocore's retries run in the caller's thread and context.
_reached: ContextVar[bool] = ContextVar("dynamodb_attempt_reached", default=False)


def install(client: DynamoDBClient) -> DynamoDBClient:
    """Register the note-taking hook on ``client`` (idempotent)."""
    client.meta.events.register("needs-retry.dynamodb", _note, unique_id=_UNIQUE_ID)
    return client


def _note(caught_exception: Exception | None = None, response: Any = None, **_: Any) -> None:
    if caught_exception is not None:
        # Only a connection never made proves its request was not sent.
        if not isinstance(caught_exception, EndpointConnectionError | ConnectTimeoutError):
            _reached.set(True)
    elif response is not None and response[0].status_code >= 500:
        _reached.set(True)  # DynamoDB failed while handling it: it may have been applied


@contextmanager
def watching() -> Iterator[Callable[[], bool]]:
    """Within it, the returned function says whether an attempt of a call made here may
    have reached DynamoDB (read it before leaving the block)."""
    token = _reached.set(False)
    try:
        yield _reached.get
    finally:
        _reached.reset(token)

"""Whether any attempt of a DynamoDB write may have reached DynamoDB, not only the last.

aiodynamo retries an attempt that failed on the way (a read timeout, a dropped connection, a
5xx) and raises only the last attempt's error. That error speaks for its own attempt alone:
a refused connection on the second attempt says nothing reached DynamoDB *then*, while the
first, which timed out waiting for its answer, may have been applied. A write reported as
certainly not applied invites the client to send it again under a new idempotency key.

So a write keeps a note (``noting``) in its context, where aiodynamo runs its attempts, and
the client's HTTP (``Noting``, around every attempt) marks it when that attempt may have
reached DynamoDB. The client reads it when it reports the failed write
(``datastore.async_client.unavailable``). A read keeps none: one context variable read per attempt.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from aiodynamo.http.types import HttpImplementation, Request, RequestFailed, Response

from datastore.http_connections import NotSent


@dataclass(slots=True)
class Note:
    reached: bool = False


_note: ContextVar[Note | None] = ContextVar("dynamodb_attempt_reached", default=None)


def noting() -> Note:
    """A fresh note for the write about to be sent in this context; ``done`` when it ends."""
    note = Note()
    _note.set(note)
    return note


def done(note: Note) -> None:
    if _note.get() is note:
        _note.set(None)


class Noting:
    """An HTTP implementation that marks the current write's note when an attempt may have
    reached DynamoDB: sent with no answer, an answer cut short, or a 5xx (DynamoDB failed
    while handling it). Only a connection never made proves its request was not sent."""

    __slots__ = ("_inner",)

    def __init__(self, inner: HttpImplementation) -> None:
        self._inner = inner

    async def __call__(self, request: Request) -> Response:
        note = _note.get()
        if note is None:
            return await self._inner(request)
        try:
            response = await self._inner(request)
        except RequestFailed as error:
            if not isinstance(error.inner, NotSent):
                note.reached = True
            raise
        except TimeoutError:
            note.reached = True
            raise
        if response.status >= 500:
            note.reached = True
        return response

"""How a streamed answer is framed: one class per stream ``negotiate`` can choose (response.py).

- ``EventStream``: GraphQL over Server-Sent Events in graphql-sse's distinct connections
  mode (its PROTOCOL.md, which urql and GraphQL Yoga speak too): each result is an
  ``event: next`` whose ``data`` is the ExecutionResult, the end is ``event: complete``
  (with an empty ``data`` line, which EventSource needs to dispatch it), and a heartbeat is a
  comment line, which every SSE parser skips.
- ``IncrementalMultipart``: GraphQL over HTTP's incremental delivery, ``multipart/mixed;
  boundary="-"``: each part an ExecutionResult with ``hasNext``, the last one ``hasNext:
  false``. The format has no part a client skips, so it has no heartbeat.
- ``ApolloMultipart``: Apollo's multipart subscriptions (subscriptionSpec 1.0): each result
  in a ``payload``, a heartbeat ``{}``, and an error that ends it from the transport's side
  as ``{"payload": null, "errors": [...]}``.

A query or mutation asked for as a stream is one result (``single``): graphql-sse's one
``next`` then ``complete``. A subscription's stream (graphql_api/subscriptions/over_http.py)
is ``opening``, a ``result`` per event, ``heartbeat``s, maybe ``ended``, then ``closing``.
Each part is sent whole, its delimiter included, so a client reads it the moment it arrives.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import orjson
from starlette.responses import Response
from strawberry.types import ExecutionResult

from graphql_api.http import response
from graphql_api.http.response import APOLLO_MULTIPART, EVENT_STREAM, MULTIPART

_PART_HEAD: Final = b"\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\n\r\n"


class Framing:
    content_type: ClassVar[str]
    name: ClassVar[str]  # for the log

    def opening(self) -> bytes:
        return b""

    def result(self, body: dict[str, Any]) -> bytes:
        """One result of the stream (``body`` as response.payload makes it)."""
        raise NotImplementedError

    def heartbeat(self) -> bytes | None:
        """What keeps an idle stream open through proxies; None where the format has nothing."""
        return None

    def ended(self, errors: list[dict[str, Any]]) -> bytes:
        """The transport's last result: why the server ended the subscription (before ``closing``)."""
        return self.result({"errors": errors})

    def closing(self) -> bytes:
        raise NotImplementedError

    def single(self, body: dict[str, Any]) -> bytes:
        """The whole answer to a query or mutation: its one result, and the end."""
        return self.opening() + self.result(body) + self.closing()


class EventStream(Framing):
    content_type = f"{EVENT_STREAM}; charset=utf-8"
    name = "SSE"

    def result(self, body: dict[str, Any]) -> bytes:
        # orjson writes no line breaks, so the result is one data line.
        return b"event: next\ndata: " + orjson.dumps(body) + b"\n\n"

    def heartbeat(self) -> bytes | None:
        return b":\n\n"

    def closing(self) -> bytes:
        return b"event: complete\ndata:\n\n"


class _Multipart(Framing):
    boundary: ClassVar[bytes]

    def opening(self) -> bytes:
        return b"--" + self.boundary

    def part(self, body: dict[str, Any]) -> bytes:
        """One JSON part, closed by the next boundary at once: a client parses a part when it arrives."""
        encoded = orjson.dumps(body)
        return _PART_HEAD % len(encoded) + encoded + b"\r\n--" + self.boundary


class IncrementalMultipart(_Multipart):
    boundary = b"-"
    content_type = f'{MULTIPART}; boundary="-"'
    name = "multipart"

    def result(self, body: dict[str, Any]) -> bytes:
        return self.part({**body, "hasNext": True})

    def closing(self) -> bytes:
        return self.part({"hasNext": False}) + b"--\r\n"

    def single(self, body: dict[str, Any]) -> bytes:
        return self.opening() + self.part({**body, "hasNext": False}) + b"--\r\n"


class ApolloMultipart(_Multipart):
    boundary = b"graphql"
    content_type = f'{MULTIPART};boundary="graphql";subscriptionSpec=1.0'
    name = "Apollo multipart"

    def result(self, body: dict[str, Any]) -> bytes:
        return self.part({"payload": body})

    def heartbeat(self) -> bytes | None:
        return self.part({})

    def ended(self, errors: list[dict[str, Any]]) -> bytes:
        return self.part({"payload": None, "errors": errors})

    def closing(self) -> bytes:
        return b"--\r\n"  # after the last part's boundary: the closing delimiter


FRAMINGS: Final[dict[str, Framing]] = {
    EVENT_STREAM: EventStream(),
    MULTIPART: IncrementalMultipart(),
    APOLLO_MULTIPART: ApolloMultipart(),
}


def single_response(media_type: str, result: ExecutionResult) -> Response:
    """A query's or mutation's answer as the stream ``media_type``: its one result, status 200.

    A result that is a refusal at the HTTP level (401, 429, 503, 504: response.status_of) is
    the JSON answer it would be anyway, with its status: the stream never started. Any other,
    a document that did not validate included, is the stream's one result, as graphql-sse
    reports validation errors in a ``next``.
    """
    if response.status_of(response.JSON, [result], batch=False) != 200:
        return response.results_response(response.JSON, [result], batch=False)
    framing = FRAMINGS[media_type]
    return Response(framing.single(response.payload(result)), media_type=framing.content_type)

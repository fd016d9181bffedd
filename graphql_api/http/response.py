"""The response: its media type (from Accept), its status code, and its JSON body.

``application/graphql-response+json`` when the client asks for it, with the spec's status
codes: 400 for a request error (the document did not parse or validate, so nothing ran and
``data`` is absent), 200 once execution started. ``application/json`` otherwise, the legacy
type, where a well-formed request answers 200 but for the cases below. Whatever the type, an
UNAUTHENTICATED error answers 401 with WWW-Authenticate, so clients and proxies see a failed sign-in the same way
whether the token was refused before GraphQL ran or the caller's account was (active.py).
Likewise a request refused by the tenant rate limit (limits/tenant_rate.py) answers 429 with
Retry-After, whatever the type: the server denied the request before running it, which the
spec leaves to 4xx codes (and graphql-response+json requires, as the response has no data).
In a batch, where other operations may have run, the status stays 200 and Retry-After is set.

An outage is visible at the HTTP level too: a request that produced no data (``data`` null or
absent) because DynamoDB failed (an UNAVAILABLE error) answers 503 with Retry-After, and one
whose deadline passed inside execution (TIMEOUT) 504, like the deadline's own answer
(lifetime.py), whatever the type. The draft requires a 2xx only when ``data`` is not null, and
a 4xx/5xx when it is absent; for ``data: null`` it recommends 200 but leaves 5xx open, and
under application/json it allows 5xx for compatibility. 5xx is what load balancers, API
Gateway's 5xx metric and retrying clients understand, and the body still carries the codes.
A partial response (data with some fields null and UNAVAILABLE errors) must stay 200: it is
counted by the metrics instead (observability/metrics.py, ``hr_requests_with_error``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import orjson
from starlette.responses import Response
from strawberry.types import ExecutionResult

from graphql_api.execution.errors import Code
from graphql_api.http.errors import TransportCode, TransportError

GRAPHQL_RESPONSE_JSON: Final = "application/graphql-response+json"
JSON: Final = "application/json"
# The streams (graphql_api/http/streams.py frames them): Server-Sent Events as graphql-sse's
# distinct connections mode, GraphQL over HTTP's incremental delivery, and Apollo's
# multipart subscriptions (``multipart/mixed`` with ``subscriptionSpec=1.0``: a name of ours).
EVENT_STREAM: Final = "text/event-stream"
MULTIPART: Final = "multipart/mixed"
APOLLO_MULTIPART: Final = "multipart/mixed;subscriptionspec=1.0"
STREAMS: Final = (EVENT_STREAM, MULTIPART, APOLLO_MULTIPART)
UNAUTHENTICATED_HEADERS: Final = {"WWW-Authenticate": "Bearer"}
# Seconds a client should wait before retrying after an outage's 503, as the concurrency cap's.
OUTAGE_RETRY_AFTER_SECONDS: Final = 1
# A response without data because of one of these: its 5xx.
OUTAGE_STATUS: Final = {Code.UNAVAILABLE.value: 503, Code.TIMEOUT.value: 504}


def negotiate(accept: str | None) -> str:
    """The media type to answer with; application/json without an Accept header or for ``*/*``.

    A client that names ``application/graphql-response+json`` (at least as high as
    ``application/json``) gets it. A stream is answered only to a client that names it:
    ``text/event-stream`` (graphql-sse's distinct connections), ``multipart/mixed`` (GraphQL
    over HTTP's incremental delivery) or ``multipart/mixed;subscriptionSpec=1.0`` (Apollo's).
    Between JSON and a stream, the higher quality wins, then the one the client lists first:
    urql lists JSON first for a query and the event stream first for a subscription. One that
    accepts none of them is refused with 406.
    """
    if accept is None or not accept.strip():
        return JSON
    # Each media type's quality and where the client first listed it.
    ranges: dict[str, tuple[float, int]] = {}
    for index, part in enumerate(accept.split(",")):
        media_range, *parameters = (piece.strip() for piece in part.split(";"))
        media_range = media_range.lower()
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            name = name.strip().lower()
            if name == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
            elif media_range == MULTIPART and name == "subscriptionspec" and value.strip().strip('"') == "1.0":
                media_range = APOLLO_MULTIPART
        known_quality, first = ranges.get(media_range, (0.0, index))
        ranges[media_range] = (max(quality, known_quality), first)
    nowhere = (0.0, len(ranges) + 1)
    graphql_response = ranges.get(GRAPHQL_RESPONSE_JSON, nowhere)
    wildcard = max(ranges.get("application/*", nowhere), ranges.get("*/*", nowhere), key=lambda rank: rank[0])
    json = ranges.get(JSON, wildcard)
    best_json = GRAPHQL_RESPONSE_JSON if graphql_response[0] > 0 and graphql_response[0] >= json[0] else JSON
    json_quality = max(graphql_response[0], json[0])
    json_first = min(rank[1] for rank in (graphql_response, json) if rank[0] == json_quality)
    offers = [(best_json, (json_quality, json_first))]
    offers += [(stream, ranges[stream]) for stream in STREAMS if stream in ranges]
    chosen, (quality, _) = max(offers, key=lambda offer: (offer[1][0], -offer[1][1]))
    if quality > 0:
        return chosen
    raise TransportError(
        406,
        TransportCode.NOT_ACCEPTABLE,
        f"this server answers {GRAPHQL_RESPONSE_JSON}, {JSON}, {EVENT_STREAM} or {MULTIPART}",
    )


def streamed(media_type: str) -> bool:
    """Whether ``media_type`` (as ``negotiate`` chose it) is one of the streams."""
    return media_type in STREAMS


def is_request_error(result: ExecutionResult) -> bool:
    """True when the request failed before execution: no data, and no error has a path."""
    return result.data is None and bool(result.errors) and all(error.path is None for error in result.errors or ())


def payload(result: ExecutionResult) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if not is_request_error(result):
        body["data"] = result.data  # a request error has no data entry at all (GraphQL spec 7.1.2)
    if result.errors:
        body["errors"] = [error.formatted for error in result.errors]
    if result.extensions:
        body["extensions"] = result.extensions
    return body


def _unauthenticated(results: Sequence[ExecutionResult]) -> bool:
    return any(
        (error.extensions or {}).get("code") == Code.UNAUTHENTICATED.value
        for result in results
        for error in result.errors or ()
    )


def retry_after(results: Sequence[ExecutionResult]) -> float | None:
    """The longest ``retryAfter`` of the RATE_LIMITED errors; None when there are none."""
    waits = [
        float((error.extensions or {}).get("retryAfter", 0))
        for result in results
        for error in result.errors or ()
        if (error.extensions or {}).get("code") == Code.RATE_LIMITED.value
    ]
    return max(waits) if waits else None


def outage_status(result: ExecutionResult) -> int | None:
    """503 when ``result`` has no data and DynamoDB failed it (UNAVAILABLE), 504 when its
    deadline passed (TIMEOUT); None otherwise, and always for a result with data."""
    if result.data is not None:
        return None
    codes = {(error.extensions or {}).get("code") for error in result.errors or ()}
    return next((status for code, status in OUTAGE_STATUS.items() if code in codes), None)


def status_of(media_type: str, results: Sequence[ExecutionResult], *, batch: bool) -> int:
    if _unauthenticated(results):
        return 401
    if not batch and is_request_error(results[0]) and retry_after(results) is not None:
        return 429
    outage = None if batch else outage_status(results[0])
    if outage is not None:
        return outage
    if media_type == GRAPHQL_RESPONSE_JSON and not batch and is_request_error(results[0]):
        return 400
    return 200


def encode(body: object, status: int, media_type: str, headers: dict[str, str]) -> Response:
    return Response(orjson.dumps(body), status_code=status, headers=headers, media_type=f"{media_type}; charset=utf-8")


def results_response(media_type: str, results: Sequence[ExecutionResult], *, batch: bool) -> Response:
    status = status_of(media_type, results, batch=batch)
    headers = dict(UNAUTHENTICATED_HEADERS) if status == 401 else {}
    wait = retry_after(results)
    if wait is not None:
        headers["Retry-After"] = str(max(1, math.ceil(wait)))  # whole seconds (RFC 9110 10.2.3)
    elif status == 503:
        headers["Retry-After"] = str(OUTAGE_RETRY_AFTER_SECONDS)
    bodies = [payload(result) for result in results]
    return encode(bodies if batch else bodies[0], status, media_type, headers)


def error_response(error: TransportError, media_type: str) -> Response:
    return encode(error.body(), error.status, media_type, error.headers)

"""What one HTTP request did, filled in as it runs and read by the access log when it ends.

The record lives in the ASGI scope's ``state`` (``request.state`` in Starlette), so the
GraphQL layer and the middlewares that refuse requests fill it in without knowing how the
access log is built, and the access log reads it without knowing how the view is built.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from datastore.aws.calls import Call, CallLog
from graphql_api.observability.request_id import request_id_of

RECORD: Final = "hr.record"


@dataclass
class RequestRecord:
    request_id: str
    # The caller's organisation; None for anonymous callers and platform operators.
    tenant: str | None = None
    # Names of the GraphQL operations executed (None for an anonymous one); several in a batch.
    operations: list[str | None] = field(default_factory=list)
    # The names among them whose document validated and ran (not refused before execution):
    # only these may become metric labels (observability/labels.py).
    ran: list[str] = field(default_factory=list)
    # Every error of the response by its extensions.code.
    error_codes: Counter[str] = field(default_factory=Counter)
    # (operation name, member) for each member marked @deprecated that an operation which ran
    # selects (execution/deprecations.py); the name is None for an anonymous operation.
    deprecated: list[tuple[str | None, str]] = field(default_factory=list)
    _call_logs: list[CallLog] = field(default_factory=list)

    def add_call_log(self, log: CallLog) -> None:
        if not any(known is log for known in self._call_logs):
            self._call_logs.append(log)

    def calls(self) -> list[Call]:
        return [call for log in self._call_logs for call in log.snapshot()]


def start(scope: Scope) -> RequestRecord:
    """A new record for the request of ``scope``, under the id RequestIdMiddleware gave it."""
    record = RequestRecord(request_id_of(scope))
    scope.setdefault("state", {})[RECORD] = record
    return record


def record_of(scope: Scope) -> RequestRecord | None:
    """The request's record; None when no access log runs (an app built without one)."""
    found = scope.get("state", {}).get(RECORD)
    return found if isinstance(found, RequestRecord) else None


def record_error(scope: Scope, code: str) -> None:
    """Count an error a middleware answered with, before any GraphQL ran."""
    record = record_of(scope)
    if record is not None:
        record.error_codes[code] += 1


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished request, as the access log, the metrics and EMF report it."""

    request_id: str
    method: str
    path: str
    # The route's path template ("/graphql"); None when no route matched (a 404).
    route: str | None
    # None when the client went away before any response started.
    status: int | None
    duration_seconds: float
    tenant: str | None
    operations: tuple[str | None, ...]
    error_codes: dict[str, int]
    dynamodb_calls: int
    read_units: float
    write_units: float
    ran: tuple[str, ...] = ()
    deprecated: tuple[tuple[str | None, str], ...] = ()

    @classmethod
    def of(cls, record: RequestRecord, scope: Scope, status: int | None, duration_seconds: float) -> Outcome:
        calls = record.calls()
        return cls(
            request_id=record.request_id,
            method=str(scope.get("method", "")),
            path=str(scope.get("path", "")),
            route=route_of(scope),
            status=status,
            duration_seconds=duration_seconds,
            tenant=record.tenant,
            operations=tuple(record.operations),
            error_codes=dict(sorted(record.error_codes.items())),
            dynamodb_calls=len(calls),
            read_units=sum(call.read_units for call in calls),
            write_units=sum(call.write_units for call in calls),
            ran=tuple(record.ran),
            deprecated=tuple(record.deprecated),
        )

    @property
    def operation(self) -> str | None:
        """The operation's name; "batch" for several, None for none or an anonymous one."""
        if len(self.operations) > 1:
            return "batch"
        return self.operations[0] if self.operations else None


def route_of(scope: Scope) -> str | None:
    """The path template of the app's route for ``scope``, whether or not the request got there.

    The router notes the route it dispatched to; a request refused by a middleware before
    routing (a 401) is matched against the app's routes here, so it counts under its route.
    """
    route = scope.get("route")
    if route is None:
        routes: list[BaseRoute] = getattr(scope.get("app"), "routes", [])
        route = next((r for r in routes if r.matches(scope)[0] is not Match.NONE), None)
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else None

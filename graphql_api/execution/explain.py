"""EXPLAIN: ``"extensions": {"explain": true}`` gets the response's ``extensions.plan``.

For each field path (list positions left out, so a thousand employees are one path): the
loader and access pattern its reads went through and the DynamoDB calls they made; for each
call: its operation, index, the keys it carried, the wave it ran in, the items it read, the
read capacity it consumed and how long it took. The totals are the request's CallLog's, read
the same way as ``extensions.cost`` (execution/cost.py), so the two agree.

Who may ask: an organisation's admin, a platform operator, or anyone when the server runs in
development (HR_ENV=development); anyone else's request runs as if it had not asked.

What it costs when not asked: nothing per field. The field a load came from is known only while
explaining: the operation is then run by graphql-core with a middleware that notes each
field's path in a context variable (``FIELD``), where the compiled plan (execution/plan/) has
no per-field hook to note it with. Both read through the same loaders, which batch the same
way, so the waves are the plan's (tests/graphql_api/execution/test_explain.py compares them).
The loaders look at ``EXPLAINING`` only for a key they have not seen in the request, and
``python -m bench.explain`` measures the off path against the code without it.

A subscription's deliveries each carry the plan of their own calls (each delivery renews the
session's CallLog: subscriptions/session.py), in the same shape; the loaders note their
batches, but Strawberry resolves the payload's fields with graphql-core's middleware of its
own, so a delivery's calls are all under ``(request)``. A live event is read by its round's
loaders, shared by the organisation's subscribers on the process: the subscriber whose load
went first sees the loader and access pattern of the round's batches, the others ``direct``.

Keys: a key of the caller's own organisation is shown whole; any other (another
organisation's, a platform item's) only by its shape, each value replaced by ``…``: a plan
never shows another tenant's keys.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from inspect import isawaitable
from typing import Any

from graphql import ExecutionResult as GraphQLExecutionResult
from graphql import GraphQLResolveInfo, execute
from graphql.pyutils import Path
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from datastore.aws.calls import Call, CallLog
from datastore.kinds.entities import Role
from datastore.tenancy import keys
from graphql_api.execution.library_internals import graphql_schema

# Where a load was asked for outside any field: the caller's active check (auth/active.py).
OUTSIDE_FIELDS = "(request)"


@dataclass(slots=True)
class LoaderBatch:
    loader: str
    # (access pattern, field path) of each key of the batch.
    keys: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class ExplainLog:
    """What the loaders noted while a request was explained: who asked for each key first."""

    askers: dict[tuple[int, Any], str] = field(default_factory=dict)
    batches: dict[int, LoaderBatch] = field(default_factory=dict)

    def asked(self, loader: object, key: Any) -> None:
        self.askers.setdefault((id(loader), key), FIELD.get() or OUTSIDE_FIELDS)

    def batch(self, batch: int, loader: object, batch_keys: list[Any]) -> None:
        found = LoaderBatch(type(loader).__name__)
        for key in batch_keys:
            found.keys.append((access_pattern(key), self.askers.get((id(loader), key), OUTSIDE_FIELDS)))
        self.batches[batch] = found


# Set only while a request is explained (``Explain``); the loaders read it for new keys.
EXPLAINING: ContextVar[ExplainLog | None] = ContextVar("hr_explaining", default=None)
# The path of the field whose resolver is running, while explaining.
FIELD: ContextVar[str | None] = ContextVar("hr_explain_field", default=None)


def outside_fields(start: Callable[[], None]) -> None:
    """Run ``start`` (what the request starts at its first load: the caller's active check), its
    loads noted as the request's rather than the field's that happened to be resolving."""
    if FIELD.get() is None:
        start()
        return
    token = FIELD.set(None)
    try:
        start()
    finally:
        FIELD.reset(token)


def access_pattern(key: Any) -> str:
    """How a loader key is read: an entity by id (its kind), or a list by the function that pages it."""
    if isinstance(key, tuple) and key and isinstance(key[0], Enum):
        return f"{key[0].name.lower()} by id"
    fetch = getattr(key, "fetch", None)
    if fetch is not None:
        return str(getattr(fetch, "__name__", "list"))
    return "by key"


def field_path(path: Path) -> str:
    """``path`` without its list positions: one entry for every employee of a page."""
    names = [str(key) for key in path.as_list() if isinstance(key, str)]
    return ".".join(names)


def _note_field(next_: Callable[..., Any], root: Any, info: GraphQLResolveInfo[Any], **args: Any) -> Any:
    """graphql-core middleware, while explaining only: the field's path is in ``FIELD`` while
    its resolver runs, and while what it returned is awaited."""
    path = field_path(info.path)
    token = FIELD.set(path)
    try:
        result = next_(root, info, **args)
    finally:
        FIELD.reset(token)
    if isawaitable(result):
        return _awaited_within(path, result)
    return result


async def _awaited_within(path: str, awaitable: Awaitable[Any]) -> Any:
    token = FIELD.set(path)
    try:
        return await awaitable
    finally:
        FIELD.reset(token)


def may_explain(context: Any) -> bool:
    """An admin, a platform operator, or anyone in development."""
    session = getattr(context, "session", None)
    settings = getattr(getattr(session, "services", None), "settings", None)
    if settings is not None and getattr(settings, "development", False):
        return True
    principal = getattr(context, "principal", None)
    if principal is None or principal.api_key:
        return False
    return bool(principal.is_platform or principal.role is Role.ADMIN)


def wants_explain(extensions: Any) -> bool:
    return isinstance(extensions, dict) and extensions.get("explain") is True


class Explain(SchemaExtension):
    """Runs an explained query through graphql-core with ``_note_field`` and adds ``plan``.

    Listed just before CompiledPlans, which then finds the result set and leaves it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.log: ExplainLog | None = None

    async def on_execute(self) -> AsyncIterator[None]:
        execution = self.execution_context
        if not wants_explain(execution.operation_extensions) or not may_explain(execution.context):
            yield
            return
        self.log = ExplainLog()
        if execution.operation_type is OperationType.SUBSCRIPTION:
            # Each delivery runs later in the subscription's own task, whose context this is:
            # set for as long as it lives, so the loaders note each delivery's batches; its
            # fields are graphql-core's to resolve, without the middleware (see the docstring).
            EXPLAINING.set(self.log)
            yield
            return
        token = EXPLAINING.set(self.log)
        try:
            document = execution.graphql_document
            if execution.result is None and document is not None and execution.operation_type is OperationType.QUERY:
                result = execute(
                    graphql_schema(execution.schema),
                    document,
                    execution.root_value,
                    execution.context,
                    execution.variables,
                    execution.operation_name,
                    middleware=[_note_field],
                    executor_class=execution.schema.execution_context_class,
                    is_awaitable=optimized_is_awaitable,  # type: ignore[arg-type]
                    operation_extensions=execution.operation_extensions,
                )
                if isawaitable(result):
                    result = await result
                assert isinstance(result, GraphQLExecutionResult)
                execution.result = result
            yield
        finally:
            EXPLAINING.reset(token)

    def get_results(self) -> dict[str, Any]:
        if self.log is None:
            return {}
        context = self.execution_context.context
        session = getattr(context, "session", None)
        call_log = getattr(session, "call_log", None)
        if not isinstance(call_log, CallLog):
            return {}
        principal = getattr(context, "principal", None)
        return {"plan": plan_of(call_log, self.log, getattr(principal, "org_id", None))}


def plan_of(log: CallLog, explained: ExplainLog, org_id: str | None) -> dict[str, Any]:
    """The plan of the calls in ``log`` (see the module's docstring)."""
    recorded = log.snapshot()
    waves = log.waves()
    wave_of = {id(call): number for number, wave in enumerate(waves, start=1) for call in wave}
    calls: list[dict[str, Any]] = []
    fields: dict[str, dict[str, Any]] = {}
    for number, call in enumerate(recorded, start=1):
        batch = explained.batches.get(call.batch) if call.batch is not None else None
        paths = sorted({path for _pattern, path in batch.keys}) if batch is not None else [OUTSIDE_FIELDS]
        patterns = sorted({pattern for pattern, _path in batch.keys}) if batch is not None else ["direct"]
        loader = batch.loader if batch is not None else None
        entry: dict[str, Any] = {
            "call": number,
            "wave": wave_of.get(id(call)),
            "operation": call.operation,
            "loader": loader,
            "accessPatterns": patterns,
            "fields": paths,
            "keys": [_shown(key, org_id) for key in _keys_of(call)],
            "itemsRead": call.items,
            "readCapacityUnits": round(call.read_units, 2),
            "writeCapacityUnits": round(call.write_units, 2),
            "ms": None if call.finished is None else round((call.finished - call.started) * 1000, 2),
        }
        if "IndexName" in call.params:
            entry["index"] = call.params["IndexName"]
        if call.error is not None:
            entry["error"] = call.error
        calls.append(entry)
        for path in paths:
            summary = fields.setdefault(
                path, {"path": path, "loaders": set(), "accessPatterns": set(), "waves": set(), "calls": []}
            )
            if loader is not None:
                summary["loaders"].add(loader)
            summary["accessPatterns"].update(
                pattern for pattern, asked in (batch.keys if batch is not None else [("direct", path)]) if asked == path
            )
            summary["waves"].add(entry["wave"])
            summary["calls"].append(number)
    return {
        "waves": len(waves),
        "requestCount": len(recorded),
        "readCapacityUnits": round(sum(call.read_units for call in recorded), 2),
        "itemsRead": sum(call.items for call in recorded),
        "fields": [
            {
                **summary,
                "loaders": sorted(summary["loaders"]),
                "accessPatterns": sorted(summary["accessPatterns"]),
                "waves": sorted(wave for wave in summary["waves"] if wave is not None),
            }
            for summary in sorted(fields.values(), key=lambda found: (min(found["calls"]), found["path"]))
        ],
        "calls": calls,
    }


def _keys_of(call: Call) -> list[str]:
    """The keys a call carried, as ``PK | SK`` (a Query: its partition key and sort key condition)."""
    params = call.params

    def spelt(key: dict[str, Any]) -> str:
        pk = key.get(keys.PK, {}).get("S", "?")
        sk = key.get(keys.SK, {}).get("S")
        return pk if sk is None else f"{pk} | {sk}"

    if call.operation in ("GetItem", "UpdateItem", "DeleteItem"):
        return [spelt(params.get("Key", {}))]
    if call.operation == "PutItem":
        return [spelt(params.get("Item", {}))]
    if call.operation == "BatchGetItem":
        return [spelt(key) for request in params.get("RequestItems", {}).values() for key in request.get("Keys", [])]
    if call.operation == "Query":
        return [pk for pk in call.partition_keys()]
    if call.operation == "TransactWriteItems":
        return [
            spelt(body.get("Key") or body.get("Item") or {})
            for entry in params.get("TransactItems", [])
            for body in entry.values()
        ]
    return []


# A key's words (ORG, DEPT, #METADATA): upper-case letters and underscores, never 26 long (a ULID).
_WORD = re.compile(r"[A-Z_]{1,25}")


def _shown(key: str, org_id: str | None) -> str:
    """``key`` whole when its partition is the caller's organisation's, else only its shape."""
    partition = key.split(" | ")[0]
    if org_id is not None and (partition == f"ORG#{org_id}" or partition.startswith(f"ORG#{org_id}#")):
        return key
    return " | ".join(
        "#".join(segment if not segment or _WORD.fullmatch(segment) else "…" for segment in part.split("#"))
        for part in key.split(" | ")
    )

"""Running a plan: the response built straight from the resolved values.

graphql-core's semantics, field by field: a resolver's error is located at the field's path;
a null or an error in a non-null position nulls the nearest nullable parent, and errors
below a position that was nulled are dropped (``_Errors``, as graphql-core's own). What is saved
is graphql-core's per-field machinery: the fields to resolve, their arguments and the shape
of their completion are decided once in the plan; a field that Strawberry resolves by
attribute is read without building a GraphQLResolveInfo; completed values are written into
their parent's dict in place.

Asynchronous resolvers keep today's batching: the synchronous part of a subtree is walked
at once and every awaitable it meets is gathered together, so the loads a level issues are
queued in the same turn of the loop and the DataLoaders batch them into one wave. An
awaitable's subtree continues as soon as it resolves, as it does in graphql-core. An error
after an await propagates through ``_Slot`` records (where a value sits, whether it may be
null), since the Python stack that built the parents is gone by then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from datetime import date, datetime, time, timedelta
from enum import Enum
from types import CoroutineType, GeneratorType
from typing import Any

from graphql import GraphQLError, GraphQLObjectType, GraphQLResolveInfo, Undefined, located_error
from graphql.execution import Executor
from graphql.execution.values import get_argument_values
from graphql.pyutils import Path, inspect, is_iterable
from strawberry.types.base import has_object_definition
from strawberry.types.cast import TYPE_CAST_ATTRIBUTE

from graphql_api.execution.fields import USE_RESOLVER, Deferred
from graphql_api.execution.plan.compiler import CompiledPlan, Completion, CompletionKind, FieldPlan, ObjectPlan

log = logging.getLogger("hr.plan")

Pending = list[Coroutine[Any, Any, None]]

# A field of one object whose value a loader's batch will give: (the value, its field, its path).
_Waiting = tuple[Deferred[Any], FieldPlan, Path]


# Where a value sits in the response, for null propagation: (container, key, nullable,
# parent slot, path); a tuple, since one is made for every object of the response.
_Slot = tuple[Any, Any, bool, Any, Path | None]

# The types no value of which is awaitable, an exception, Undefined or a Deferred: the checks
# for those are skipped for them. It starts with the builtins and the standard library's value
# types a resolver gives and learns the rest (a page's objects) the first time it meets them
# (``_learn``).
_PLAIN: set[type] = {str, int, float, bool, type(None), list, tuple, dict, datetime, date, time, timedelta}
# The types ``_learn`` has looked at and found not plain, so it looks at each type once.
_NOT_PLAIN: set[type] = set()
# Bounds both sets: a type is only learnt while fewer than this many are known.
_LEARNT_AT_MOST = 10_000
_NEVER_PLAIN = (BaseException, CoroutineType, GeneratorType)
_ATTRIBUTE_HOOKS = ("__getattr__", "__getattribute__", "__class__")


# ``Path(prev, key, typename)`` without the Python frame of a NamedTuple's ``__new__``: a
# response of a thousand objects makes several thousand paths (tests/.../test_runner.py
# holds the two equal).
_path: Callable[[type[Path], tuple[Path | None, str | int, str | None]], Path] = tuple.__new__


def _learn(kind: type) -> bool:
    """Whether no value of exactly ``kind`` is awaitable, an exception, Undefined or a Deferred;
    recorded in ``_PLAIN`` or ``_NOT_PLAIN``.

    Strawberry's ``is_awaitable`` (the executor's) asks ``isinstance`` of coroutines and
    generators, which a class could answer through a ``__class__`` of its own, then
    ``hasattr(value, "__await__")``, which the class decides unless it customises attribute
    access or its instances carry a ``__dict__`` (one could hold ``__await__``). A class
    Strawberry declares an output type with keeps its declared fields in its ``__dict__``, and
    an enum's members are made with their class, so both are taken as plain like a class
    without a ``__dict__``.
    """
    # The builtins' attribute access is the generic one; any other class's hook is in its own
    # dict (a C type's generic one shows there too, and is refused).
    own = [base for base in kind.__mro__ if base.__module__ != "builtins"]
    plain = (
        not issubclass(kind, _NEVER_PLAIN)
        and kind is not Deferred
        and kind is not type(Undefined)
        and not hasattr(kind, "__await__")
        and not any(name in vars(base) for base in own for name in _ATTRIBUTE_HOOKS)
        and (kind.__dictoffset__ == 0 or has_object_definition(kind) or issubclass(kind, Enum))
    )
    if len(_PLAIN) + len(_NOT_PLAIN) < _LEARNT_AT_MOST:
        (_PLAIN if plain else _NOT_PLAIN).add(kind)
    return plain


class _Errors:
    """The field errors of a run, and the positions they nulled.

    An error at or below a position already nulled is dropped: once a non-null field's error
    has nulled its parent, what fails beneath it later is not reported (graphql-core keeps the
    same record, its CollectedErrors, for itself).
    """

    __slots__ = ("_nulled", "errors")

    def __init__(self) -> None:
        self.errors: list[GraphQLError] = []
        self._nulled: set[Path | None] = set()

    def add(self, error: GraphQLError, path: Path | None) -> None:
        if self._within_nulled(path):
            return
        self._nulled.add(path)
        self.errors.append(error)

    def _within_nulled(self, path: Path | None) -> bool:
        nulled = self._nulled
        while path is not None:
            if path in nulled:
                return True
            path = path.prev
        return None in nulled


def _invalid_return_type(type_: GraphQLObjectType, value: Any, field: FieldPlan) -> GraphQLError:
    """graphql-core's error for a value its object type's ``is_type_of`` refused."""
    return GraphQLError(f"Expected value of type '{type_}' but got: {inspect(value)}.", field.nodes)


class _Run:
    def __init__(self, executor: Executor[Any], root_value: Any) -> None:
        self.executor = executor
        self.context = executor.context_value
        self.root_value = root_value
        self.is_awaitable = executor.is_awaitable
        self.errors = _Errors()
        self.arguments: dict[int, dict[str, Any]] = {}
        # The reads started ahead of their fields (``prefetch``), waited for before the run
        # ends: one whose field never ran (its parent null) still finishes inside the request,
        # so the request's calls and cost are all counted in its response.
        self.prefetched: list[asyncio.Future[Any]] = []

    async def run(self, plan: CompiledPlan) -> tuple[dict[str, Any] | None, list[GraphQLError]]:
        holder: dict[str, Any] = {}
        data: dict[str, Any] = {}
        holder["data"] = data
        root: _Slot = (holder, "data", True, None, None)
        pending: Pending = []
        try:
            self.fill(plan.root, self.root_value, data, root, pending)
        except GraphQLError as error:  # a non-null root field failed: no data at all
            holder["data"] = None
            self.errors.add(error, None)
        await _settle(pending)
        if self.prefetched:
            await _drain(self.prefetched)
        return holder["data"], self.errors.errors

    # -- objects and fields ------------------------------------------------------------

    def fill(self, plan: ObjectPlan, source: Any, data: dict[str, Any], slot: _Slot, pending: Pending) -> None:
        """Resolve and complete ``plan``'s fields on ``source`` into ``data`` (sitting at ``slot``).

        Raises the located error of a non-null field that failed, for the caller to place.
        """
        parent_path = slot[4]
        is_awaitable = self.is_awaitable
        typename = plan.type.name
        waiting: list[_Waiting] = []
        try:
            for field in plan.fields:
                key = field.key
                completion = field.completion
                if completion is None:  # __typename
                    data[key] = typename
                    continue
                path: Path | None = None
                info: GraphQLResolveInfo[Any] | None = None
                try:
                    read = field.read
                    if read is not None:
                        value = read(source)
                    elif field.info_free:
                        value = field.resolve(source, None)  # type: ignore[misc]  # info_free implies a resolver
                    else:
                        load = field.load
                        if load is not None:
                            value = load(self.context, self.arguments_of(field))
                            if field.prefetches:
                                self.prefetch_safely(field)
                        else:
                            preread = field.preread
                            value = USE_RESOLVER if preread is None else preread(source)
                        if value is USE_RESOLVER:
                            path = _path(Path, (parent_path, key, typename))
                            info = self.info(field, path)
                            arguments = self.arguments_of(field)
                            resolve = field.resolve or self.executor.field_resolver
                            value = resolve(source, info, **arguments)
                    kind = type(value)
                    if kind is field.passthrough:  # a str for a String: its own output
                        data[key] = value
                        continue
                    plain = kind in _PLAIN or (kind not in _NOT_PLAIN and _learn(kind))
                    if not plain and kind is Deferred:
                        data[key] = None  # holds the key's place in the response's order
                        waiting.append((value, field, _path(Path, (parent_path, key, typename))))
                        continue
                    if not plain and is_awaitable(value):
                        data[key] = None  # holds the key's place in the response's order
                        if path is None:
                            path = _path(Path, (parent_path, key, typename))
                        pending.append(self.await_slot(value, completion, field, data, key, slot, path, info))
                        continue
                    # A plain value is neither Undefined nor an exception: only None is checked.
                    if completion.kind is CompletionKind.LEAF and (
                        value is not None if plain else value is not Undefined and not isinstance(value, Exception)
                    ):
                        coerced = completion.leaf_output(value)  # type: ignore[misc]  # LEAF has it
                        if coerced is None or coerced is Undefined:
                            Executor.complete_leaf_value(completion.type, value)  # raises graphql-core's error
                        data[key] = coerced
                        continue
                    if path is None:
                        path = _path(Path, (parent_path, key, typename))
                    self.complete(completion, field, value, data, key, slot, path, pending, info)
                except Exception as raw:
                    if path is None:
                        path = _path(Path, (parent_path, key, typename))
                    error = located_error(raw, field.nodes, path.as_list())
                    if not completion.nullable:
                        raise error from None
                    data[key] = None
                    self.errors.add(error, path)
        finally:
            # Also when a non-null field raised: the fields already waiting on a batch are
            # completed (into an object then nulled), as the awaitables already pending are, so
            # no read a Deferred started is left unawaited.
            if waiting:
                pending.append(self.await_deferred(waiting, data, slot))

    def prefetch_safely(self, field: FieldPlan) -> None:
        """``prefetch``, whose failure is a bug to log, never the field's error: a read ahead
        only moves a read earlier, and the field's own resolver reads what it must."""
        try:
            self.prefetch(field)
        except Exception:
            log.exception("reading ahead of %s.%s failed; its fields read for themselves", field.parent, field.name)

    def prefetch(self, field: FieldPlan) -> None:
        """Start the reads of ``field``'s object's fields that its id alone decides (compiler
        ``_prefetches``), queued after the field's own load: they join its wave, and the
        fields' resolvers, one round trip later, find them in their loaders' caches."""
        context = self.context
        object_id = field.known_id(context, self.arguments_of(field))  # type: ignore[misc]  # prefetches imply it
        if object_id is None:
            return
        for child, start in field.prefetches:
            try:
                arguments = self.arguments_of(child)
            except GraphQLError:
                continue  # the field reports it when it resolves; nothing is read ahead
            started = start(context, object_id, arguments)
            if started is not None:
                # Its failure taken as it happens: a run cancelled before ``_drain`` (a
                # deadline, a client gone) leaves nothing for asyncio to log as never retrieved.
                started.add_done_callback(_retrieve)
                self.prefetched.append(started)

    def info(self, field: FieldPlan, path: Path) -> GraphQLResolveInfo[Any]:
        return self.executor.build_resolve_info(field.definition, field.nodes, field.parent, path)  # type: ignore[arg-type]  # not __typename

    def arguments_of(self, field: FieldPlan) -> dict[str, Any]:
        if field.arguments is not None:
            return field.arguments
        found = self.arguments.get(id(field))
        if found is None:
            executor = self.executor
            found = get_argument_values(
                field.definition,  # type: ignore[arg-type]  # not __typename
                field.nodes[0],
                executor.variable_values,
                None,
                executor.hide_suggestions,
            )
            self.arguments[id(field)] = found
        return found

    # -- values --------------------------------------------------------------------------

    def complete(
        self,
        completion: Completion,
        field: FieldPlan,
        value: Any,
        container: Any,
        key: Any,
        parent: _Slot,
        path: Path,
        pending: Pending,
        info: GraphQLResolveInfo[Any] | None = None,
    ) -> None:
        """Put ``value``'s completion at ``container[key]``; raise if it may not be null and is.

        ``info`` is the field's, for ``resolve_type`` and ``is_type_of`` (a list's items share
        their field's, as in graphql-core); made here when not given.
        """
        if isinstance(value, Exception):
            raise value
        if value is None or value is Undefined:
            if completion.nullable:
                container[key] = None
                return
            raise TypeError(f"Cannot return null for non-nullable field {field.parent}.{field.name}.")
        kind = completion.kind
        if kind is CompletionKind.LEAF:
            coerced = completion.leaf_output(value)  # type: ignore[misc]  # LEAF has it
            if coerced is None or coerced is Undefined:
                Executor.complete_leaf_value(completion.type, value)  # raises graphql-core's error
            container[key] = coerced
            return
        if kind is CompletionKind.LIST:
            self.complete_list(completion, field, value, container, key, parent, path, pending)
            return
        if kind is CompletionKind.ABSTRACT:
            by_class = completion.by_class
            known = None if by_class is None else by_class.get(type(value))
            if known is not None and not hasattr(value, TYPE_CAST_ATTRIBUTE):
                plan = known  # what Strawberry's own resolver would name it (compiler._resolved_by_class)
            else:
                if info is None:
                    info = self.info(field, path)
                abstract = completion.type
                resolve_type = abstract.resolve_type or self.executor.type_resolver
                runtime_name = resolve_type(value, info, abstract)
                if self.is_awaitable(runtime_name):
                    container[key] = None
                    pending.append(
                        self.await_abstract(runtime_name, completion, field, value, container, key, parent, path)
                    )
                    return
                runtime = self.executor.ensure_valid_runtime_type(runtime_name, abstract, field.details, info, value)
                plan = completion.plans[runtime.name]
        else:
            plan = completion.plan  # type: ignore[assignment]  # OBJECT has it
        self.complete_object(plan, completion.nullable, field, value, container, key, parent, path, pending, info)

    def complete_object(
        self,
        plan: ObjectPlan,
        nullable: bool,
        field: FieldPlan,
        value: Any,
        container: Any,
        key: Any,
        parent: _Slot,
        path: Path,
        pending: Pending,
        info: GraphQLResolveInfo[Any] | None = None,
    ) -> None:
        is_type_of = plan.type.is_type_of
        # Strawberry's own check passes an instance of exactly its class that was not cast.
        if is_type_of is not None and (type(value) is not plan.origin or hasattr(value, TYPE_CAST_ATTRIBUTE)):
            if info is None and plan.type_check_reads_info:
                info = self.info(field, path)
            # Strawberry's own check ignores its info (compiler.py), so None is passed to it.
            verdict = is_type_of(value, info)  # type: ignore[arg-type]  # None only where never read
            if self.is_awaitable(verdict):
                container[key] = None
                pending.append(
                    self.await_is_type_of(verdict, plan, nullable, field, value, container, key, parent, path)
                )
                return
            if not verdict:
                raise _invalid_return_type(plan.type, value, field)
        data: dict[str, Any] = {}
        container[key] = data
        self.fill(plan, value, data, (container, key, nullable, parent, path), pending)

    def complete_list(
        self,
        completion: Completion,
        field: FieldPlan,
        value: Any,
        container: Any,
        key: Any,
        parent: _Slot,
        path: Path,
        pending: Pending,
    ) -> None:
        if self.executor.is_async_iterable(value):
            container[key] = None
            pending.append(self.await_slot(_listed(value), completion, field, container, key, parent, path))
            return
        if not is_iterable(value):
            raise GraphQLError(f"Expected Iterable, but did not find one for field '{field.parent}.{field.name}'.")
        item = completion.item
        assert item is not None
        items: list[Any] = []
        container[key] = items
        slot: _Slot = (container, key, completion.nullable, parent, path)
        is_awaitable = self.is_awaitable
        shared = None
        if item.kind is CompletionKind.ABSTRACT or (
            item.kind is CompletionKind.OBJECT
            and item.plan.type.is_type_of is not None  # type: ignore[union-attr]  # OBJECT has a plan
            and item.plan.type_check_reads_info  # type: ignore[union-attr]
        ):
            shared = self.info(field, path)
        for index, element in enumerate(value):
            items.append(None)
            item_path = _path(Path, (path, index, None))
            kind = type(element)
            if kind not in _PLAIN and (kind in _NOT_PLAIN or not _learn(kind)) and is_awaitable(element):
                pending.append(self.await_slot(element, item, field, items, index, slot, item_path, shared))
                continue
            try:
                self.complete(item, field, element, items, index, slot, item_path, pending, shared)
            except Exception as raw:
                error = located_error(raw, field.nodes, item_path.as_list())
                if not item.nullable:
                    raise error from None
                items[index] = None
                self.errors.add(error, item_path)

    # -- after an await --------------------------------------------------------------------

    async def await_slot(
        self,
        awaitable: Awaitable[Any],
        completion: Completion,
        field: FieldPlan,
        container: Any,
        key: Any,
        parent: _Slot,
        path: Path,
        info: GraphQLResolveInfo[Any] | None = None,
    ) -> None:
        pending: Pending = []
        try:
            value = await awaitable
            self.complete(completion, field, value, container, key, parent, path, pending, info)
        except Exception as raw:
            self.fail(raw, completion.nullable, field, container, key, parent, path)
        await _settle(pending)

    async def await_deferred(self, waiting: list[_Waiting], data: dict[str, Any], slot: _Slot) -> None:
        """The deferred fields of one object, after one wait on the batches they are in.

        Each field completes as if its resolver had returned the value, errors included.
        """
        ready = {deferred.ready for deferred, _, _ in waiting if deferred.ready is not None}
        unsettled = {future for future in ready if not future.done()}
        if unsettled:
            # asyncio.wait never cancels what it waits for: the batches are shared.
            await asyncio.wait(unsettled)
        pending: Pending = []
        for deferred, field, path in waiting:
            completion: Completion = field.completion  # type: ignore[assignment]  # not __typename
            try:
                self.complete(completion, field, deferred.value(), data, field.key, slot, path, pending)
            except Exception as raw:
                self.fail(raw, completion.nullable, field, data, field.key, slot, path)
        await _settle(pending)

    async def await_abstract(
        self,
        awaitable: Awaitable[Any],
        completion: Completion,
        field: FieldPlan,
        value: Any,
        container: Any,
        key: Any,
        parent: _Slot,
        path: Path,
    ) -> None:
        pending: Pending = []
        try:
            info = self.info(field, path)
            runtime = self.executor.ensure_valid_runtime_type(
                await awaitable, completion.type, field.details, info, value
            )
            plan = completion.plans[runtime.name]
            self.complete_object(plan, completion.nullable, field, value, container, key, parent, path, pending)
        except Exception as raw:
            self.fail(raw, completion.nullable, field, container, key, parent, path)
        await _settle(pending)

    async def await_is_type_of(
        self,
        verdict: Awaitable[bool],
        plan: ObjectPlan,
        nullable: bool,
        field: FieldPlan,
        value: Any,
        container: Any,
        key: Any,
        parent: _Slot,
        path: Path,
    ) -> None:
        pending: Pending = []
        try:
            if not await verdict:
                raise _invalid_return_type(plan.type, value, field)
            data: dict[str, Any] = {}
            container[key] = data
            self.fill(plan, value, data, (container, key, nullable, parent, path), pending)
        except Exception as raw:
            self.fail(raw, nullable, field, container, key, parent, path)
        await _settle(pending)

    def fail(
        self, raw: Exception, nullable: bool, field: FieldPlan, container: Any, key: Any, parent: _Slot, path: Path
    ) -> None:
        """An error at ``path`` after an await: null it, or the nearest nullable position above."""
        error = located_error(raw, field.nodes, path.as_list())
        if nullable:
            container[key] = None
            self.errors.add(error, path)
            return
        slot: _Slot | None = parent
        while slot is not None and not slot[2]:
            slot = slot[3]
        assert slot is not None  # the root slot ("data") is nullable
        slot[0][slot[1]] = None
        self.errors.add(error, slot[4])


async def _settle(pending: Pending) -> None:
    """Await a subtree's awaitables: one inline, as graphql-core does, so errors keep its order."""
    if len(pending) == 1:
        await pending[0]
    elif pending:
        await asyncio.gather(*pending)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a read ahead's failure retrieved: the field that reads it reports it, or none does."""
    if not future.cancelled():
        future.exception()


async def _drain(futures: list[asyncio.Future[Any]]) -> None:
    """Wait for ``futures``, never cancelling them (their failures are ``_retrieve``'s)."""
    unfinished = [future for future in futures if not future.done()]
    if unfinished:
        await asyncio.wait(unfinished)


async def _listed(values: Any) -> list[Any]:
    return [value async for value in values]


async def run_plan(
    plan: CompiledPlan, executor: Executor[Any], root_value: Any
) -> tuple[dict[str, Any] | None, list[GraphQLError]]:
    """The data and errors of ``plan`` run with ``executor``'s variables, context and resolvers."""
    return await _Run(executor, root_value).run(plan)


__all__ = ["run_plan"]

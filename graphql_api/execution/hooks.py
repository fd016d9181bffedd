"""Strawberry's extension runner, with each extension class's hooks wrapped once, not once a request.

For every stage of an operation (the operation, parsing, validation, execution) Strawberry's
runner looks up each extension's hook and wraps it anew: ``contextlib.contextmanager`` over a
bound method, with its ``update_wrapper``. With this schema's extensions that is 76 look-ups
and 22 wrappings a request, before any hook runs. A hook's wrapping depends only on its class,
so ``HookRunner`` keeps it per class and stage, and a request's hook costs one ``partial``.

Entering and leaving a stage is still Strawberry's own (its context managers' ``__aenter__``
and ``__aexit__`` over the same list of hooks), so the order, the mix of synchronous and
asynchronous hooks, and what an exception does are unchanged. A hook that is neither kind of
generator (a plain method) is wrapped per request by Strawberry, as before; none of ours is.
``get_extensions_results`` skips the extensions that keep the base class's empty results.
A class's hooks are read once, at its first request: one reassigned on the class later (a
test patching ``on_execute``, say) is not seen; nothing here does that.
tests/graphql_api/execution/test_hooks.py holds all of this to Strawberry's own runner.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from functools import partial
from typing import Any, Final, NamedTuple

from strawberry.extensions import SchemaExtension
from strawberry.extensions.context import (
    ExecutingContextManager,
    ExtensionContextManagerBase,
    OperationContextManager,
    ParsingContextManager,
    ValidationContextManager,
    WrappedHook,
)
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.types import ExecutionContext
from strawberry.utils.await_maybe import await_maybe

_BASE_RESULTS: Final = SchemaExtension.get_results


class _Hook(NamedTuple):
    """One class's hook for one stage, as Strawberry's ``get_hook`` wraps it, unbound."""

    factory: Callable[[Any], Any] | None  # extension -> its context manager; None: no hook
    is_async: bool
    per_request: bool = False  # not a generator: Strawberry wraps it, per request


_NONE: Final = _Hook(None, False)
_PER_REQUEST: Final = _Hook(None, False, per_request=True)
# (extension class, hook name) -> its hook. Written once per pair; concurrent first writes agree.
_wrapped: dict[tuple[type, str], _Hook] = {}


def _wrap(cls: type, hook_name: str) -> _Hook:
    hook = getattr(cls, hook_name)
    if hook is getattr(SchemaExtension, hook_name):
        return _NONE
    if inspect.isgeneratorfunction(hook):
        return _Hook(contextlib.contextmanager(hook), is_async=False)
    if inspect.isasyncgenfunction(hook):
        return _Hook(contextlib.asynccontextmanager(hook), is_async=True)
    return _PER_REQUEST


class _WrappedOnce(ExtensionContextManagerBase):
    __slots__ = ()

    def get_hook(self, extension: SchemaExtension) -> WrappedHook | None:
        key = (type(extension), self.HOOK_NAME)
        wrapped = _wrapped.get(key)
        if wrapped is None:
            wrapped = _wrapped[key] = _wrap(*key)
        if wrapped.per_request:
            return super().get_hook(extension)
        if wrapped.factory is None:
            return None
        return WrappedHook(extension=extension, hook=partial(wrapped.factory, extension), is_async=wrapped.is_async)


class _Operation(_WrappedOnce, OperationContextManager):
    __slots__ = ()


class _Parsing(_WrappedOnce, ParsingContextManager):
    __slots__ = ()


class _Validation(_WrappedOnce, ValidationContextManager):
    __slots__ = ()


class _Executing(_WrappedOnce, ExecutingContextManager):
    __slots__ = ()


class HookRunner(SchemaExtensionsRunner):
    """The runner ``ApiSchema.create_extensions_runner`` makes for each operation."""

    def operation(self) -> OperationContextManager:
        return _Operation(self.extensions)

    def parsing(self) -> ParsingContextManager:
        return _Parsing(self.extensions)

    def validation(self) -> ValidationContextManager:
        return _Validation(self.extensions)

    def executing(self) -> ExecutingContextManager:
        return _Executing(self.extensions)

    async def get_extensions_results(self, ctx: ExecutionContext) -> dict[str, Any]:
        # Strawberry's own, less the awaits of the base class's empty dict (17 of 18 a request).
        data: dict[str, Any] = {}
        for extension in self.extensions:
            if type(extension).get_results is not _BASE_RESULTS:
                data.update(await await_maybe(extension.get_results()))
        data.update(ctx.extensions_results)
        return data

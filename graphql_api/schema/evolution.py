"""What a schema change does to clients: ``server.py schema-check``.

The code's schema is compared with an earlier one by graphql-core's own differ
(``find_breaking_changes``, ``find_dangerous_changes``), and every operation a client may send
is validated against the code's schema with graphql-core's rules: an operation that no longer
validates is one the server would refuse once deployed. A breaking change no client's
operation uses is reported but does not fail the check: what fails it is an operation that
breaks. Each deprecated member is listed with the operations still selecting it and when
each was last seen (a persisted document's last put: datastore/tenants/persisted_documents.py).

Where the operations come from is the caller's business (server.py gathers them: the trusted
documents manifest, a manifest or directory given, the persisted documents of the table);
here they are ``ClientOperation`` values, each named by where it came from.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from graphql import (
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    build_schema,
    find_breaking_changes,
    find_dangerous_changes,
    parse,
    validate,
)

from graphql_api.execution.deprecations import deprecated_members, deprecated_selections

SCHEMA_PATH = "schema.graphql"


class BadInput(Exception):
    """The previous schema or a document source cannot be read; the message says why."""


@dataclass(frozen=True, slots=True)
class ClientOperation:
    """One document a client may send: where it is kept, and when it was last seen (if known)."""

    source: str  # "trusted", "manifest", "persisted" or "file"
    key: str  # its id in the manifest, its file, or its SHA-256
    text: str
    organization: str | None = None
    last_seen: datetime | None = None


@dataclass(frozen=True, slots=True)
class Change:
    kind: str  # graphql-core's BreakingChangeType / DangerousChangeType name
    description: str


@dataclass(frozen=True, slots=True)
class Failure:
    """An operation that would not run against the new schema, and graphql-core's reasons."""

    operation: ClientOperation
    name: str | None
    errors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Usage:
    operation: ClientOperation
    name: str | None


@dataclass
class Report:
    against: str
    breaking: list[Change] = field(default_factory=list)
    dangerous: list[Change] = field(default_factory=list)
    checked: int = 0
    failures: list[Failure] = field(default_factory=list)
    # Every deprecated member of the new schema, its reason, and what still selects it.
    deprecated: dict[str, tuple[str, list[Usage]]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        def where(operation: ClientOperation) -> dict[str, Any]:
            found: dict[str, Any] = {"source": operation.source, "id": operation.key}
            if operation.organization is not None:
                found["organization"] = operation.organization
            if operation.last_seen is not None:
                found["lastSeen"] = operation.last_seen.isoformat()
            return found

        return {
            "against": self.against,
            "ok": self.ok,
            "breaking": [{"type": c.kind, "description": c.description} for c in self.breaking],
            "dangerous": [{"type": c.kind, "description": c.description} for c in self.dangerous],
            "operationsChecked": self.checked,
            "failing": [{**where(f.operation), "operation": f.name, "errors": list(f.errors)} for f in self.failures],
            "deprecated": [
                {
                    "member": member,
                    "reason": reason,
                    "usedBy": [{**where(u.operation), "operation": u.name} for u in uses],
                }
                for member, (reason, uses) in self.deprecated.items()
            ],
        }

    def lines(self) -> Iterator[str]:
        yield f"schema-check against {self.against}"
        yield f"breaking changes: {len(self.breaking)}"
        for change in self.breaking:
            yield f"  {change.kind}: {change.description}"
        yield f"dangerous changes: {len(self.dangerous)}"
        for change in self.dangerous:
            yield f"  {change.kind}: {change.description}"
        yield f"operations checked: {self.checked}; failing against the new schema: {len(self.failures)}"
        for failure in self.failures:
            yield f"  {_describe(failure.operation, failure.name)}"
            for error in failure.errors:
                yield f"    {error}"
        yield f"deprecated members: {len(self.deprecated)}"
        for member, (reason, uses) in self.deprecated.items():
            yield f"  {member} ({reason}): used by {len(uses)} operation{'s' * (len(uses) != 1)}"
            for use in uses:
                seen = use.operation.last_seen
                yield f"    {_describe(use.operation, use.name)}" + (
                    f", last seen {seen:%Y-%m-%d}" if seen is not None else ""
                )
        yield "OK: no operation a client sends breaks" if self.ok else "FAIL: an operation a client sends breaks"


def _describe(operation: ClientOperation, name: str | None) -> str:
    where = f"{operation.source} {operation.key}"
    if operation.organization is not None:
        where += f" of organisation {operation.organization}"
    return f"{name or 'anonymous operation'} ({where})"


def previous_sdl(against: str, repository: Path) -> tuple[str, str]:
    """The earlier schema's SDL and how it was found: ``against`` is a file, else a git ref
    whose ``schema.graphql`` is read (``git show REF:schema.graphql``)."""
    path = Path(against)
    if path.is_file():
        try:
            return path.read_text(), str(path)
        except (OSError, UnicodeDecodeError) as error:
            raise BadInput(f"--against: cannot read {path}: {error}") from None
    try:
        shown = subprocess.run(
            ["git", "show", f"{against}:{SCHEMA_PATH}"],
            cwd=repository,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as error:
        raise BadInput(f"--against {against}: no such file, and git cannot run: {error}") from None
    if shown.returncode != 0:
        detail = shown.stderr.strip().splitlines()[-1] if shown.stderr.strip() else "git show failed"
        raise BadInput(f"--against {against}: no such file, nor a git ref with {SCHEMA_PATH} ({detail})")
    return shown.stdout, f"{against}:{SCHEMA_PATH}"


def schema_of(sdl: str, where: str) -> GraphQLSchema:
    try:
        return build_schema(sdl)
    except (GraphQLError, TypeError) as error:
        raise BadInput(f"{where} is not a schema: {str(error).splitlines()[0]}") from None


def manifest_operations(path: Path, source: str) -> list[ClientOperation]:
    """The documents of a ``{id: document}`` manifest (graphql-codegen's, Relay's), or of a
    directory's ``.graphql`` files, each file one document."""
    if path.is_dir():
        files = sorted(path.rglob("*.graphql"))
        if not files:
            raise BadInput(f"--documents: {path} holds no .graphql file")
        return [ClientOperation("file", str(file.relative_to(path)), _read(file)) for file in files]
    try:
        manifest = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise BadInput(f"{path}: cannot read a manifest: {error}") from None
    if not isinstance(manifest, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in manifest.items()
    ):
        raise BadInput(f"{path} must be a JSON object of id -> document text")
    return [ClientOperation(source, key, text) for key, text in manifest.items()]


def _read(file: Path) -> str:
    try:
        return file.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise BadInput(f"cannot read {file}: {error}") from None


def check(
    old: GraphQLSchema,
    new: GraphQLSchema,
    operations: Iterable[ClientOperation],
    *,
    against: str,
) -> Report:
    """Compare ``old`` with ``new`` and check each operation against ``new``."""
    report = Report(
        against,
        breaking=[Change(c.type.name, c.description) for c in find_breaking_changes(old, new)],
        dangerous=[Change(c.type.name, c.description) for c in find_dangerous_changes(old, new)],
    )
    members = deprecated_members(new)
    uses: dict[str, list[Usage]] = {member: [] for member in members}
    for operation in operations:
        report.checked += 1
        try:
            document = parse(operation.text)
        except GraphQLError as error:
            report.failures.append(Failure(operation, None, (error.message,)))
            continue
        names = _operation_names(document)
        errors = validate(new, document)
        if errors:
            for name in names:
                report.failures.append(Failure(operation, name, tuple(_located(error) for error in errors)))
            continue
        for name in names:
            for member in deprecated_selections(new, document, name):
                uses[member].append(Usage(operation, name))
    report.deprecated = {member: (reason, _latest_first(uses[member])) for member, reason in members.items()}
    return report


def _operation_names(document: DocumentNode) -> list[str | None]:
    return [
        definition.name.value if definition.name is not None else None
        for definition in document.definitions
        if isinstance(definition, OperationDefinitionNode)
    ] or [None]


def _located(error: GraphQLError) -> str:
    where = ", ".join(f"line {location.line}" for location in error.locations or ())
    return f"{error.message}" + (f" ({where})" if where else "")


def _latest_first(uses: list[Usage]) -> list[Usage]:
    return sorted(uses, key=lambda use: (use.operation.last_seen is None, -(_epoch(use.operation.last_seen))))


def _epoch(when: datetime | None) -> float:
    return 0.0 if when is None else when.timestamp()


def json_report(report: Report) -> str:
    return orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n"

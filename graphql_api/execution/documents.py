"""Parsed and validated documents, kept (bounded) so a repeated document is not parsed again.

Keyed by the document's text: one entry holds its syntax tree and whether it passed
validation. Validation depends on the schema and the rule set (the document limits and,
in production, no introspection), both fixed for a process, so a text that validated once
validates again and its validation is skipped. Documents that fail to parse or validate are
not kept: the cache holds only what clients really run, and a client cannot fill it with
refusals. Strawberry's ParserCache/ValidationCache cannot be used as they are: our limit
rules are classes made per request, so ValidationCache (keyed by the rule classes) would
never hit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from graphql import DocumentNode
from strawberry.extensions import SchemaExtension

from graphql_api.lru import Lru

DEFAULT_ENTRIES: Final = 512


@dataclass
class DocumentCache:
    """The process's cache, shared by every request's CachedDocuments extension."""

    max_entries: int = DEFAULT_ENTRIES
    # How many documents were parsed and validated for want of an entry (tests read it).
    parses: int = 0
    _entries: Lru[str, DocumentNode] = field(init=False)

    def __post_init__(self) -> None:
        self._entries = Lru(self.max_entries)

    def get(self, text: str) -> DocumentNode | None:
        return self._entries.get(text)

    def put(self, text: str, document: DocumentNode) -> None:
        self._entries.put(text, document)


class CachedDocuments(SchemaExtension):
    def __init__(self, cache: DocumentCache) -> None:
        super().__init__()
        self.cache = cache
        self.hit = False

    def on_parse(self) -> Iterator[None]:
        execution = self.execution_context
        cached = None if execution.query is None else self.cache.get(execution.query)
        if cached is not None:
            self.hit = True
            execution.graphql_document = cached  # Strawberry parses only when this is None
        else:
            self.cache.parses += 1
        yield

    def on_validate(self) -> Iterator[None]:
        execution = self.execution_context
        if self.hit:
            execution.pre_execution_errors = []  # validated when it was cached: skip it
        yield
        if not self.hit and execution.pre_execution_errors == [] and execution.query is not None:
            document = execution.graphql_document
            if document is not None:
                self.cache.put(execution.query, document)

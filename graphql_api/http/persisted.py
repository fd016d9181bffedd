"""Persisted documents: Apollo's automatic persisted queries, and trusted documents.

APQ (``extensions.persistedQuery``, version 1): a hash alone runs the document registered
under it, or answers PERSISTED_QUERY_NOT_FOUND (HTTP 200, message "PersistedQueryNotFound",
which Apollo Client takes as the cue to send the text); a hash with the text checks the hash
and, once the document has parsed and validated, registers it in DynamoDB
(datastore/documents.py), so every server process can run it by hash. A bounded LRU in front
saves the GetItem for documents this process has seen.

Trusted documents (TRUSTED_DOCUMENTS, a ``{id: document}`` manifest as graphql-codegen's
client preset and Relay emit): only the manifest's documents run, sent by id
(``documentId`` or ``extensions.persistedQuery.sha256Hash``) or in full; anything else is
refused before it is parsed, with HTTP 400 and PERSISTED_QUERY_REQUIRED. A SHA-256 id is
one id with or without the ``sha256:`` prefix (GraphQL over HTTP, appendix A): the client
preset keys its manifest ``sha256:<hex>`` and sends that as ``documentId``, while an
APQ-style ``sha256Hash`` is the bare hex.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from datastore import documents
from datastore.config import ConfigError
from datastore.table import Table
from graphql_api.context import RequestContext
from graphql_api.http.errors import TransportCode, TransportError, bad_request
from graphql_api.http.request import Operation
from graphql_api.lru import Lru

APQ_VERSION: Final = 1
# Documents this process keeps in memory; each is at most MAX_BODY_BYTES of text.
APQ_CACHE_ENTRIES: Final = 1000
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Resolved:
    """The text to run, and the hash to register it under once it has validated (APQ)."""

    query: str | None
    register: str | None = None


def sha256_of(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def load_manifest(path: str) -> dict[str, str]:
    """The trusted documents manifest: a JSON object of id -> document text."""
    try:
        manifest = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise ConfigError(f"TRUSTED_DOCUMENTS: cannot read {path}: {error}") from None
    if not isinstance(manifest, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in manifest.items()
    ):
        raise ConfigError(f"TRUSTED_DOCUMENTS: {path} must be a JSON object of id -> document text")
    return manifest


def _required(message: str) -> TransportError:
    return TransportError(400, TransportCode.PERSISTED_QUERY_REQUIRED, message)


class PersistedDocuments:
    def __init__(self, table: Table, trusted: Mapping[str, str] | None = None) -> None:
        self.table = table
        self.trusted = None if trusted is None else {_trusted_id(key): text for key, text in trusted.items()}
        self._trusted_texts = frozenset(() if trusted is None else trusted.values())
        self._known: Lru[str, str] = Lru(APQ_CACHE_ENTRIES)

    async def resolve(self, operation: Operation, context: RequestContext) -> Resolved:
        persisted = (operation.extensions or {}).get("persistedQuery")
        if self.trusted is not None:
            return Resolved(self._trusted(operation, persisted))
        document_id = operation.document_id
        if persisted is None and document_id is None:
            return Resolved(operation.query)
        sha256 = _apq_hash(persisted) if persisted is not None else _document_id_hash(document_id or "")
        if operation.query is None:
            return Resolved(await self._lookup(sha256, context))
        if sha256_of(operation.query) != sha256:
            raise TransportError(400, TransportCode.PERSISTED_QUERY_HASH_MISMATCH, "provided sha does not match query")
        return Resolved(operation.query, None if sha256 in self._known else sha256)

    async def register(self, sha256: str, query: str, context: RequestContext) -> None:
        """Store a document that has parsed and validated, for every process to find."""
        await context.session.run(documents.put_document, self.table, sha256, query, datetime.now(UTC))
        self._known.put(sha256, query)

    def _trusted(self, operation: Operation, persisted: Any) -> str:
        assert self.trusted is not None
        document_id = operation.document_id
        if document_id is None and isinstance(persisted, dict):
            document_id = persisted.get("sha256Hash") if isinstance(persisted.get("sha256Hash"), str) else None
        if document_id is not None:
            text = self.trusted.get(_trusted_id(document_id))
            if text is None or (operation.query is not None and operation.query != text):
                raise _required("this server runs only its trusted documents; that id is not one of them")
            return text
        if operation.query is not None and operation.query in self._trusted_texts:
            return operation.query
        raise _required("this server runs only its trusted documents: send one by its id")

    async def _lookup(self, sha256: str, context: RequestContext) -> str:
        known = self._known.get(sha256)
        if known is not None:
            return known
        stored = await context.session.run(documents.get_document, self.table, sha256)
        if stored is None:
            # The message is the one Apollo Client's persisted-queries link looks for.
            raise TransportError(200, TransportCode.PERSISTED_QUERY_NOT_FOUND, "PersistedQueryNotFound")
        self._known.put(sha256, stored)
        return stored


def _apq_hash(persisted: Any) -> str:
    if not isinstance(persisted, dict):
        raise bad_request("extensions.persistedQuery must be an object")
    if persisted.get("version") != APQ_VERSION:
        raise TransportError(
            400, TransportCode.PERSISTED_QUERY_NOT_SUPPORTED, "only persistedQuery version 1 is supported"
        )
    sha256 = persisted.get("sha256Hash")
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
        raise bad_request("extensions.persistedQuery.sha256Hash must be 64 lowercase hexadecimal characters")
    return sha256


def _trusted_id(document_id: str) -> str:
    """A manifest id in one form: ``sha256:<hex>`` and ``<hex>`` are the same SHA-256 id."""
    bare = document_id.removeprefix("sha256:")
    return bare if _SHA256.fullmatch(bare) else document_id


def _document_id_hash(document_id: str) -> str:
    """Without a manifest a documentId is taken as a SHA-256 (``sha256:`` prefix optional)."""
    sha256 = document_id.removeprefix("sha256:")
    if not _SHA256.fullmatch(sha256):
        raise bad_request("documentId must be a SHA-256 (64 lowercase hexadecimal characters)")
    return sha256

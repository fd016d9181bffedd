"""Persisted documents: Apollo's automatic persisted queries, and trusted documents.

APQ (``extensions.persistedQuery``, version 1) is kept per organisation
(datastore/tenants/persisted_documents.py): a hash alone runs the document the caller's organisation
registered under it, or answers PERSISTED_QUERY_NOT_FOUND (HTTP 200, message
"PersistedQueryNotFound", which Apollo Client takes as the cue to send the text); a hash with
the text checks the hash and runs the text. Registering is a write into the organisation's
partitions, so only a caller of an organisation registers (an employee's token or an API
key): the operation carries a DocumentRegistration on its context, the tenant charge counts
it as one write and the caller's active check runs before execution as for a mutation
(limits/tenant_rate.py, active.py), and StoreRegistered stores the document once the
operation has actually run, inside it, so ``extensions.cost`` and the access line both show
the PutItem. A request refused before execution (by a limit, the tenant bucket, the active
check, validation) stores nothing. An anonymous caller or a platform operator has no
organisation: the text runs, nothing is stored, and a hash alone is never found (no
DynamoDB call), so Apollo Client's link keeps working for them, sending the text each time.
Nor is a document over persisted_documents.MAX_DOCUMENT_BYTES stored; it runs as text the same way.
A bounded LRU keyed by organisation and hash saves the GetItem for documents this process
has seen that organisation run, and never answers one organisation with another's.

A document run by its hash alone on a later day (UTC) than it was last put is put again, the
same way (a DocumentRegistration, one write): at most once a day per document and process, it
pushes the document's expiry ahead, so a document in use is never removed, and records when a
client last ran it (datastore/tenants/persisted_documents.py ``registered_at``, which ``schema-check`` reads).

Trusted documents (TRUSTED_DOCUMENTS, a ``{id: document}`` manifest as graphql-codegen's
client preset and Relay emit): only the manifest's documents run, sent by id
(``documentId`` or ``extensions.persistedQuery.sha256Hash``) or in full; anything else is
refused before it is parsed, with HTTP 400 and PERSISTED_QUERY_REQUIRED. A SHA-256 id is
one id with or without the ``sha256:`` prefix (GraphQL over HTTP, appendix A): the client
preset keys its manifest ``sha256:<hex>`` and sends that as ``documentId``, while an
APQ-style ``sha256Hash`` is the bare hex. Nothing is stored in that mode.

Two ways past the manifest, for developer tools and for rolling a manifest out:
- A caller whose role is in TRUSTED_DOCUMENTS_BYPASS_ROLES (platform operators by default;
  people's tokens only, never an API key) runs any document, so GraphiQL and introspection
  work for them on a server that enforces the manifest for everyone else (introspection
  still needs INTROSPECTION on). Their documents are not audited: they are no client's.
- TRUSTED_DOCUMENTS_MODE=audit runs every document sent in full, and logs and counts each one
  the manifest lacks by its SHA-256 (unlisted.py). An unlisted id sent without its text has
  nothing to run: PERSISTED_QUERY_NOT_FOUND, on which Apollo's link sends the text. The
  default, ``enforce``, refuses them.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Final

import orjson
from strawberry.extensions import SchemaExtension

from datastore.config import ConfigError
from datastore.errors import DatastoreError
from datastore.table.store import Datastore
from datastore.tenancy.scope import TenantScope
from datastore.tenants import persisted_documents
from graphql_api.execution.errors import ApiError
from graphql_api.http.errors import TransportCode, TransportError, bad_request
from graphql_api.http.request import Operation
from graphql_api.http.unlisted import UnlistedDocuments
from graphql_api.lru import Lru
from graphql_api.request.context import DocumentRegistration, RequestContext

log = logging.getLogger("hr.persisted")

APQ_VERSION: Final = 1
# Documents this process keeps in memory, by organisation; each is at most MAX_DOCUMENT_BYTES.
APQ_CACHE_ENTRIES: Final = 1000
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Resolved:
    """The text to run, and what to store once it has run (APQ, a caller of an organisation)."""

    query: str | None
    register: DocumentRegistration | None = None


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
    def __init__(
        self,
        datastore: Datastore,
        trusted: Mapping[str, str] | None = None,
        *,
        bypass_roles: tuple[str, ...] = (),
        audit: UnlistedDocuments | None = None,
    ) -> None:
        """``trusted``: the manifest; ``bypass_roles`` may run any document despite it, and with
        ``audit`` (TRUSTED_DOCUMENTS_MODE=audit) everyone may, each unlisted one recorded there."""
        self.datastore = datastore
        self.trusted = None if trusted is None else {_trusted_id(key): text for key, text in trusted.items()}
        self._trusted_texts = frozenset(() if trusted is None else trusted.values())
        self.bypass_roles = frozenset(bypass_roles)
        self.audit = audit
        # (organisation, SHA-256) -> (document, the day it was last put): an organisation is
        # answered only its own.
        self._known: Lru[tuple[str, str], tuple[str, date]] = Lru(APQ_CACHE_ENTRIES)

    async def resolve(self, operation: Operation, context: RequestContext) -> Resolved:
        persisted = (operation.extensions or {}).get("persistedQuery")
        if self.trusted is not None:
            return Resolved(self._under_manifest(operation, persisted, context))
        document_id = operation.document_id
        if persisted is None and document_id is None:
            return Resolved(operation.query)
        sha256 = _apq_hash(persisted) if persisted is not None else _document_id_hash(document_id or "")
        if operation.query is None:
            return await self._lookup(sha256, context)
        if sha256_of(operation.query) != sha256:
            raise TransportError(400, TransportCode.PERSISTED_QUERY_HASH_MISMATCH, "provided sha does not match query")
        return Resolved(operation.query, self._registration(sha256, operation.query, context))

    async def store(self, registration: DocumentRegistration, context: RequestContext) -> None:
        """Store a document whose operation has run, for every process to find (one PutItem)."""
        scope = _tenant_of(context)
        if scope is None:
            return
        table = self.datastore.table(scope)
        at = datetime.now(UTC)
        await context.session.run(
            persisted_documents.put_document, table, scope.org_id, registration.sha256, registration.text, at
        )
        self._known.put((scope.org_id, registration.sha256), (registration.text, at.date()))

    def _bypasses(self, context: RequestContext) -> bool:
        """Whether the caller's role runs documents the manifest does not list (never an API key's)."""
        principal = context.principal
        if principal is None or principal.api_key:
            return False
        role = "platform" if principal.is_platform or principal.role is None else principal.role.value
        return role in self.bypass_roles

    def _registration(self, sha256: str, text: str, context: RequestContext) -> DocumentRegistration | None:
        """What to store once the operation has run; None for a caller with no organisation, a
        document over the size bound, or one this process has seen the organisation store."""
        scope = _tenant_of(context)
        if scope is None or not persisted_documents.fits(text):
            return None
        known = self._known.get((scope.org_id, sha256))
        if known is not None and known[1] >= _today():
            return None
        return DocumentRegistration(sha256, text)

    def _under_manifest(self, operation: Operation, persisted: Any, context: RequestContext) -> str:
        """The text to run with a manifest: a listed one, any the caller's role may run, or
        (audit) any sent in full, recorded as unlisted."""
        if operation.query is not None and self._bypasses(context):
            return operation.query
        try:
            return self._trusted(operation, persisted)
        except TransportError:
            if self.audit is None:
                raise
        if operation.query is None:
            raise _not_found()  # an unlisted id alone has nothing to run: Apollo's link sends the text
        self.audit.ran(sha256_of(operation.query), operation.query, operation.operation_name, context.request_id)
        return operation.query

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

    async def _lookup(self, sha256: str, context: RequestContext) -> Resolved:
        """The organisation's document of ``sha256``, put again when last put before today."""
        scope = _tenant_of(context)
        if scope is None:
            raise _not_found()  # no organisation, no documents: the text is sent next
        known = self._known.get((scope.org_id, sha256))
        if known is None:
            stored = await context.session.run(
                persisted_documents.find_document, self.datastore.table(scope), scope.org_id, sha256
            )
            if stored is None:
                raise _not_found()
            known = (stored.document, persisted_documents.registered_at(stored).date())
            self._known.put((scope.org_id, sha256), known)
        text, put_on = known
        return Resolved(text, DocumentRegistration(sha256, text) if put_on < _today() else None)


class StoreRegistered(SchemaExtension):
    """Stores an operation's DocumentRegistration once the operation has run.

    Listed before the limits and the active check, so it leaves the execution after them
    and sees their refusals; the Cost extension reads the call log after it.
    """

    def __init__(self, persisted: PersistedDocuments) -> None:
        self.persisted = persisted

    async def on_execute(self) -> AsyncIterator[None]:
        yield
        execution = self.execution_context
        context = execution.context
        if not isinstance(context, RequestContext) or context.registration is None:
            return
        result = execution.result
        if result is None or _refused_before_running(result.data, result.errors):
            return
        try:
            await self.persisted.store(context.registration, context)
        except (DatastoreError, ApiError) as error:
            # The operation's own result stands; the client registers the document again
            # when its hash is next not found.
            log.warning("request %s: persisted document not stored: %s", context.request_id, error)


def _refused_before_running(data: Any, errors: Any) -> bool:
    """No data, and no error on a field: a limit, the bucket or the active check refused it."""
    return data is None and bool(errors) and all(getattr(error, "path", None) is None for error in errors)


def _tenant_of(context: RequestContext) -> TenantScope | None:
    """The caller's organisation, whose documents these are; None for anonymous and platform callers."""
    principal = context.principal
    if principal is None or principal.org_id is None:
        return None
    return TenantScope(principal.org_id, principal.subject)


def _today() -> date:
    return datetime.now(UTC).date()


def _not_found() -> TransportError:
    # The message is the one Apollo Client's persisted-queries link looks for.
    return TransportError(200, TransportCode.PERSISTED_QUERY_NOT_FOUND, "PersistedQueryNotFound")


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

"""Typed failures of the datastore. Callers never see a botocore exception.

Errors speak the datastore's own vocabulary: a refused value is named by its field (the
entities' field names, ``Field``), a missing object by its entity class. Where a field sits
in a caller's request is the caller's business (graphql_api/schema/mutations/input_paths.py).
"""

from __future__ import annotations

from typing import Any, Literal

Field = Literal[
    # ids, when an object is refused as a whole (a closed job, a decided application)
    "org_id",
    "dept_id",
    "emp_id",
    "job_id",
    "app_id",
    "key_id",
    # the entities' fields
    "name",
    "email",
    "first_name",
    "last_name",
    "department_id",
    "manager_id",
    "title",
    "description",
    "status",
    "role",
    "domain",
    "email_domains",
    "issuer",
    "client_ids",
    "audit_retention_days",
    "url",
    "event_types",
    "endpoint_id",
    "delivery_id",
    # what a request carries besides them
    "idempotency_key",
    "first",
    "after",
    "search",
    "secret",
    "document",
    "sha256",
    "request",
]
"""Every field an InvalidInput may name; ``request`` is a request as a whole."""


class DatastoreError(Exception):
    """Base of every error the datastore raises on purpose."""


class NotFound(DatastoreError):
    """No ``entity`` (an entity class of datastore/kinds/entities.py) has the id."""

    def __init__(self, entity: type[Any], entity_id: str | None = None) -> None:
        self.entity = entity
        self.entity_id = entity_id
        super().__init__(f"{entity.__name__} not found")


class Conflict(DatastoreError):
    """The write lost to the current state: a stale version, a taken email, a closed job."""

    def __init__(self, message: str, *, current_version: int | None = None) -> None:
        self.current_version = current_version
        super().__init__(message)


class StaleVersion(Conflict):
    """The employee or job changed since the version the caller saw."""


class InvalidInput(DatastoreError):
    def __init__(self, field: Field, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}")


class Unavailable(DatastoreError):
    """DynamoDB kept refusing (throttling, unprocessed keys, transaction conflicts), could not
    be reached or did not answer in time.

    The message never names a backend exception. ``maybe_written`` is True when a write was
    sent and its answer lost (a read timeout, a dropped connection, a 5xx): it may have been
    applied, so a retry must carry the same idempotency key.
    """

    def __init__(self, message: str, *, maybe_written: bool = False, cause: str = "") -> None:
        self.maybe_written = maybe_written
        # DynamoDB's error code or botocore's failure, for the server log only.
        self.cause = cause
        super().__init__(message)


class Refused(Unavailable):
    """DynamoDB refused the request, and sending it again would not change that: a failed
    condition, a transaction cancelled by one, an invalid request, access denied.

    ``code`` is DynamoDB's error code and ``body`` its answer (a cancelled transaction's
    ``CancellationReasons``, the item a failed condition saw, binaries as bytes), for the
    write path to turn into its own typed error; unread, it is an ``Unavailable``.
    """

    def __init__(self, code: str, body: dict[str, Any], *, maybe_written: bool = False) -> None:
        self.code = code
        self.body = body
        super().__init__("DynamoDB refused the request", maybe_written=maybe_written, cause=code)


class InProgress(Unavailable):
    """Another attempt under this idempotency key is being written and has not committed yet.

    Its answer is not known, so this attempt has none to replay: the caller retries with the
    same key and gets the first attempt's answer once it has committed.
    """

    def __init__(self) -> None:
        super().__init__("the first attempt of this request is still in progress", maybe_written=True)


class ScopeViolation(DatastoreError):
    """A request or a returned item outside the caller's scope: a bug, never a user error."""


class IdempotencyMismatch(InvalidInput):
    """An idempotency key already used for a different request (operation, input or caller)."""

    def __init__(self) -> None:
        super().__init__("idempotency_key", "was already used for a different request")


class AlreadyWritten(DatastoreError):
    """The idempotency record of this request's key exists: the write happened before.

    Raised inside the write path only and turned into a replay there; ``record`` is the
    record's item when DynamoDB returned it.
    """

    def __init__(self, record: dict[str, Any] | None) -> None:
        self.record = record
        super().__init__("this idempotency key was already used")

"""Each entity's attributes, declared once; its item reader and writer derive from that.

A Layout lists which entity field is stored under which attribute name, with which type,
and which attribute is the optimistic-locking version. ``items`` adds the keys and the
entity tag; every other module names attributes through the constants below, so a name is
spelled in one place (PynamoDB and ElectroDB declare entities the same way).

The reader and the writer are compiled from the declaration into one plain function each,
as ``dataclasses`` compiles ``__init__``: reading a hundred items is on the hot path of
every list (PERFORMANCE.md), and straight-line code with no per-attribute calls turns a
wire item into an entity in a few microseconds, with no intermediate copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Final, Generic, Literal, TypeVar

from datastore.entities import (
    NO_APPLICATIONS,
    ApiKey,
    ApiKeyGrant,
    ApiKeyStatus,
    Application,
    ApplicationCounts,
    ApplicationStatus,
    Department,
    Employee,
    EmployeeStatus,
    JobPosting,
    JobStatus,
    Organization,
    OrganizationStatus,
    Plan,
    Role,
    Subscription,
)

E = TypeVar("E")
Item = dict[str, Any]
"""An item in DynamoDB's wire format: ``{"name": {"S": "Acme"}}``."""

# --- attribute names used outside the readers and writers ---------------------------------

ORG_ID: Final = "orgId"
EMP_ID: Final = "empId"
NAME: Final = "name"
STATUS: Final = "status"
VERSION: Final = "version"
MANAGER_ID: Final = "managerId"
HEADCOUNT: Final = "headcount"
EMAIL: Final = "email"
DEPARTMENT_ID: Final = "departmentId"
EMAIL_DOMAINS: Final = "emailDomains"
DOMAIN: Final = "domain"
KEY_ID: Final = "keyId"
ROLE: Final = "role"
LAST_USED_AT: Final = "lastUsedAt"
REVOKED_AT: Final = "revokedAt"
SECRET_HASH: Final = "secretHash"

# A job's application counters, one number attribute per status (absent reads as 0). Only
# ``ADD`` changes them, in the application writes' transactions (datastore/applications.py).
APPLICATION_COUNTS: Final = {status: f"{status.value}Count" for status in ApplicationStatus}
# Raised by one with every change of a counted item's counters (a job's application counts,
# a department's headcount), in the same update; the drift repair (datastore/counts.py)
# conditions its fix on it, so a repair never lands on counters moved since its recount.
COUNTS_REVISION: Final = "countsRevision"

Kind = Literal["S", "N", "timestamp", "enum", "words", "counted"]


def timestamp(value: datetime) -> str:
    """ISO-8601 in UTC with milliseconds: sorts as text in time order."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value)


@dataclass(frozen=True, slots=True)
class Attribute:
    """One entity field stored as one attribute."""

    name: str
    field: str
    kind: Kind
    optional: bool = False
    enum: type[Enum] | None = None
    # For "counted": builds the field from the whole item.
    derive: Callable[[Item], Any] | None = None


def s(name: str, field: str, *, optional: bool = False) -> Attribute:
    return Attribute(name, field, "S", optional)


def n(name: str, field: str) -> Attribute:
    return Attribute(name, field, "N")


def ts(name: str, field: str, *, optional: bool = False) -> Attribute:
    return Attribute(name, field, "timestamp", optional)


def enum(name: str, field: str, values: type[Enum]) -> Attribute:
    return Attribute(name, field, "enum", enum=values)


def words(name: str, field: str) -> Attribute:
    """A tuple of space-free strings, stored as one space-separated string (absent when empty).

    One text value rather than a string set: the audit trail records text values, and the
    order is kept as written.
    """
    return Attribute(name, field, "words", optional=True)


def counted(name: str, field: str, derive: Callable[[Item], Any]) -> Attribute:
    """A field read from counters that other writes ``ADD`` to; ``name`` only labels it.

    The writer leaves it out, so no write of the entity itself (a versioned update of its
    attributes) can overwrite or roll back a counter.
    """
    return Attribute(name, field, "counted", derive=derive)


def read_application_counts(item: Item) -> ApplicationCounts:
    """A job item's counters; a job written before they existed has none and reads as zeros."""
    values = [item.get(name) for name in APPLICATION_COUNTS.values()]
    if not any(values):
        return NO_APPLICATIONS
    return ApplicationCounts(*(0 if value is None else int(value["N"]) for value in values))


@dataclass(frozen=True)
class Layout(Generic[E]):
    """An entity's attributes; ``read`` builds the entity, ``write`` its attribute values."""

    entity: type[E]
    attributes: tuple[Attribute, ...]
    # The attribute a versioned write is conditioned on, if the entity has one.
    version: str | None = None
    read: Callable[[Item], E] = field(init=False, repr=False)
    write: Callable[[E], Item] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = [attribute.name for attribute in self.attributes]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.entity.__name__} declares an attribute twice")
        if self.version is not None and self.version not in names:
            raise ValueError(f"{self.entity.__name__}'s version {self.version!r} is not one of its attributes")
        object.__setattr__(self, "read", _compile_reader(self.entity, self.attributes))
        object.__setattr__(self, "write", _compile_writer(self.entity, self.attributes))


def _compile_reader(entity: type[Any], attributes: tuple[Attribute, ...]) -> Callable[[Item], Any]:
    namespace: dict[str, Any] = {"_entity": entity, "_parse": parse_timestamp}
    arguments = []
    for index, attribute in enumerate(attributes):
        value = f"_v{index}" if attribute.optional else f"item[{attribute.name!r}]"
        if attribute.kind == "S":
            expression = f'{value}["S"]'
        elif attribute.kind == "N":
            expression = f'int({value}["N"])'
        elif attribute.kind == "timestamp":
            expression = f'_parse({value}["S"])'
        elif attribute.kind == "words":
            expression = f'tuple({value}["S"].split())'
        elif attribute.kind == "counted":
            namespace[f"_derive{index}"] = attribute.derive
            expression = f"_derive{index}(item)"
        else:
            assert attribute.enum is not None
            # A dict lookup, not Enum(value): the members by value, built once.
            namespace[f"_members{index}"] = {member.value: member for member in attribute.enum}
            expression = f'_members{index}[{value}["S"]]'
        if attribute.optional:
            missing = "()" if attribute.kind == "words" else "None"
            expression = f"({missing} if ({value} := item.get({attribute.name!r})) is None else {expression})"
        arguments.append(f"{attribute.field}={expression}")
    source = f"def read(item):\n    return _entity({', '.join(arguments)})\n"
    exec(source, namespace)  # source built above from the declarations only, never from input
    reader: Callable[[Item], Any] = namespace["read"]
    reader.__qualname__ = f"{entity.__name__}Layout.read"
    return reader


def _compile_writer(entity: type[Any], attributes: tuple[Attribute, ...]) -> Callable[[Any], Item]:
    namespace: dict[str, Any] = {"_timestamp": timestamp}
    required, optional = [], []
    for attribute in attributes:
        if attribute.kind == "counted":
            continue  # written only by ADD, elsewhere (see ``counted``)
        value = f"value.{attribute.field}"
        if attribute.kind == "S":
            expression = f'{{"S": {value}}}'
        elif attribute.kind == "N":
            expression = f'{{"N": str({value})}}'
        elif attribute.kind == "timestamp":
            expression = f'{{"S": _timestamp({value})}}'
        elif attribute.kind == "words":
            expression = f'{{"S": " ".join({value})}}'
        else:
            expression = f'{{"S": {value}.value}}'
        if attribute.kind == "words":
            optional.append(f"    if {value}:\n        item[{attribute.name!r}] = {expression}\n")
        elif attribute.optional:
            optional.append(f"    if {value} is not None:\n        item[{attribute.name!r}] = {expression}\n")
        else:
            required.append(f"{attribute.name!r}: {expression}")
    source = f"def write(value):\n    item = {{{', '.join(required)}}}\n{''.join(optional)}    return item\n"
    exec(source, namespace)  # source built above from the declarations only, never from input
    writer: Callable[[Any], Item] = namespace["write"]
    writer.__qualname__ = f"{entity.__name__}Layout.write"
    return writer


# --- the declarations ------------------------------------------------------------------------

ORGANIZATION: Final = Layout(
    Organization,
    (
        s(ORG_ID, "org_id"),
        s(NAME, "name"),
        enum("plan", "plan", Plan),
        enum(STATUS, "status", OrganizationStatus),
        ts("createdAt", "created_at"),
        words(EMAIL_DOMAINS, "email_domains"),
    ),
)

SUBSCRIPTION: Final = Layout(
    Subscription,
    (
        s(ORG_ID, "org_id"),
        enum("plan", "plan", Plan),
        n("seats", "seats"),
        s("billingCustomerId", "billing_customer_id", optional=True),
        ts("renewsAt", "renews_at", optional=True),
    ),
)

DEPARTMENT: Final = Layout(
    Department,
    (
        s(ORG_ID, "org_id"),
        s("deptId", "dept_id"),
        s(NAME, "name"),
        s(MANAGER_ID, "manager_id", optional=True),
        n(HEADCOUNT, "headcount"),
    ),
)

EMPLOYEE: Final = Layout(
    Employee,
    (
        s(ORG_ID, "org_id"),
        s(EMP_ID, "emp_id"),
        s(EMAIL, "email"),
        s("firstName", "first_name"),
        s("lastName", "last_name"),
        s(DEPARTMENT_ID, "department_id", optional=True),
        enum("role", "role", Role),
        enum(STATUS, "status", EmployeeStatus),
        ts("hiredAt", "hired_at"),
        ts("terminatedAt", "terminated_at", optional=True),
        n(VERSION, "version"),
    ),
    version=VERSION,
)

JOB_POSTING: Final = Layout(
    JobPosting,
    (
        s(ORG_ID, "org_id"),
        s("jobId", "job_id"),
        s(DEPARTMENT_ID, "department_id"),
        s("title", "title"),
        s("description", "description"),
        enum(STATUS, "status", JobStatus),
        ts("postedAt", "posted_at", optional=True),
        ts("closedAt", "closed_at", optional=True),
        n(VERSION, "version"),
        counted("applicationCounts", "application_counts", read_application_counts),
    ),
    version=VERSION,
)

APPLICATION: Final = Layout(
    Application,
    (
        s(ORG_ID, "org_id"),
        s("appId", "app_id"),
        s("jobId", "job_id"),
        s(EMP_ID, "emp_id"),
        enum(STATUS, "status", ApplicationStatus),
        ts("submittedAt", "submitted_at"),
    ),
)

API_KEY: Final = Layout(
    ApiKey,
    (
        s(ORG_ID, "org_id"),
        s(KEY_ID, "key_id"),
        s(NAME, "name"),
        enum(ROLE, "role", Role),
        enum(STATUS, "status", ApiKeyStatus),
        ts("createdAt", "created_at"),
        s(SECRET_HASH, "secret_hash"),
        ts(LAST_USED_AT, "last_used_at", optional=True),
        ts(REVOKED_AT, "revoked_at", optional=True),
    ),
)

# The lookup item outside the tenant partitions: what authenticating a key needs, no more.
API_KEY_GRANT: Final = Layout(
    ApiKeyGrant,
    (
        s(ORG_ID, "org_id"),
        s(KEY_ID, "key_id"),
        enum(ROLE, "role", Role),
        enum(STATUS, "status", ApiKeyStatus),
    ),
)

# --- copies: items that carry another entity's attributes, so a list reads no second item -----

MEMBERSHIP: Final = EMPLOYEE
"""An active employee's copy in its department's partition (AP7)."""
NAME_ENTRY: Final = EMPLOYEE
"""An employee's copy under one prefix of its folded names (name search and the directory by name)."""

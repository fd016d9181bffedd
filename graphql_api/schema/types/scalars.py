"""Enums and scalars shared by the schema, named and described as clients see them."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, TypeVar

import strawberry
from graphql import GraphQLEnumType, GraphQLSchema
from strawberry.schema.types.base_scalars import DateTimeDefinition

from datastore.kinds import entities
from datastore.kinds.webhook_entities import DeliveryStatus

E = TypeVar("E", bound=Enum)

# Strawberry's own DateTime (same parsing and serialising), with a description that says
# what a client sends and gets back.
SCALAR_OVERRIDES: Final[dict[object, Any]] = {
    datetime: dataclasses.replace(
        DateTimeDefinition,
        description=(
            "An instant as an ISO 8601 date and time with a UTC offset, for example "
            "`2026-03-01T09:30:00.123000+00:00` (no fraction when it is zero). The API answers in UTC; send an offset "
            "(`Z` or `+02:00`) with every input value."
        ),
    )
}


def fast_enum_output(schema: GraphQLSchema) -> None:
    """Every enum of ``schema`` maps a member to its name with one dict lookup.

    Strawberry's enum type maps a member to its name by scanning every value of the enum
    (``CustomGraphQLEnumType.coerce_output_value``), for every enum value of every response.
    Declared here once for all enum types, so resolvers hand over the member itself; anything
    else (a raw value) still goes to Strawberry's own conversion and its error.
    """
    for named in schema.type_map.values():
        wrapped = getattr(named, "wrapped_cls", None)
        if not isinstance(named, GraphQLEnumType) or not isinstance(wrapped, type) or not issubclass(wrapped, Enum):
            continue
        by_value = {value.value: name for name, value in named.values.items()}
        names = {member: by_value[member.value] for member in wrapped if member.value in by_value}
        # An instance attribute shadows the class's method; serialize() calls it too.
        named.coerce_output_value = functools.partial(_member_name, names, named.coerce_output_value)  # type: ignore[method-assign]  # per type, by design


def _member_name(names: Mapping[Enum, str], slow: Callable[[Any], str], value: Any) -> str:
    found = names.get(value) if isinstance(value, Enum) else None
    return slow(value) if found is None else found


def described(enum: type[E], name: str, description: str, values: Mapping[str, str]) -> type[E]:
    """``enum`` as a GraphQL enum with a description on the type and on each value.

    The datastore's enums are what resolvers receive, so the GraphQL enum wraps them rather
    than redefining them; ``strawberry.enum_value`` would need the descriptions inside the
    datastore's own class.
    """
    wrapped = strawberry.enum(enum, name=name, description=description)
    definition = wrapped.__strawberry_definition__  # type: ignore[attr-defined]  # set by strawberry.enum
    missing = {value.name for value in definition.values} ^ set(values)
    if missing:
        raise ValueError(f"{name}: describe exactly its values; differing: {sorted(missing)}")
    definition.values = [dataclasses.replace(value, description=values[value.name]) for value in definition.values]
    return wrapped


if TYPE_CHECKING:
    # To the type checker these are the datastore's enums, which is what resolvers receive.
    Plan = entities.Plan
    OrganizationStatus = entities.OrganizationStatus
    Role = entities.Role
    EmployeeStatus = entities.EmployeeStatus
    JobPostingStatus = entities.JobStatus
    ApplicationStatus = entities.ApplicationStatus
    ApiKeyStatus = entities.ApiKeyStatus
    WebhookDeliveryStatus = DeliveryStatus
else:
    Plan = described(
        entities.Plan,
        "Plan",
        "The organisation's price plan; it sets the seats of its billing subscription.",
        {
            "FREE": "No charge; 10 seats.",
            "PRO": "Paid; 250 seats.",
            "ENTERPRISE": "Paid, negotiated; 2,000 seats.",
        },
    )
    OrganizationStatus = described(
        entities.OrganizationStatus,
        "OrganizationStatus",
        "Whether an organisation may use the API.",
        {
            "ACTIVE": "Its members sign in and use the API.",
            "SUSPENDED": "Every request of its members is refused as UNAUTHENTICATED; its data is kept.",
            "RESTORING": "Its data is being restored by the platform (`server.py restore`): every request of "
            "its members is refused as UNAUTHENTICATED until the restore ends.",
            "CLOSING": "Closed by the platform (closeOrganization): every request of its members and API keys "
            "is refused as UNAUTHENTICATED, and all its data is deleted once the grace period is over.",
        },
    )
    Role = described(
        entities.Role,
        "Role",
        "What an employee may do inside their organisation. A token's role must match the "
        "employee record on every request.",
        {
            "ADMIN": "Everything in the organisation: people, departments, jobs, applications, "
            "billing and the audit log.",
            "MANAGER": "An employee who also sees every job posting and reviews the applications "
            "to jobs of the departments they manage.",
            "EMPLOYEE": "Reads the directory, departments and open jobs, and applies to jobs; "
            "sees only their own applications.",
        },
    )
    EmployeeStatus = described(
        entities.EmployeeStatus,
        "EmployeeStatus",
        "Whether someone still works for the organisation.",
        {
            "ACTIVE": "Employed: counted in their department's headcount and able to sign in.",
            "INACTIVE": "Terminated (see terminatedAt): kept in the directory, not counted in "
            "any headcount, and refused at sign-in.",
        },
    )
    JobPostingStatus = described(
        entities.JobStatus,
        "JobPostingStatus",
        "Where a job posting is in its life: DRAFT, then OPEN (publishJobPosting), then "
        "CLOSED (closeJobPosting). It never goes back.",
        {
            "DRAFT": "Being written; only admins and managers see it, and nobody can apply.",
            "OPEN": "Published: every employee sees it and may apply.",
            "CLOSED": "No longer taking applications; its applications stay readable.",
        },
    )
    ApplicationStatus = described(
        entities.ApplicationStatus,
        "ApplicationStatus",
        "Where an application is in review. APPLIED goes to REVIEWING or REJECTED; REVIEWING "
        "to ACCEPTED or REJECTED; the applicant may withdraw it before a decision.",
        {
            "APPLIED": "Submitted by the applicant; not yet looked at.",
            "REVIEWING": "A reviewer (an admin or the department's manager) is considering it.",
            "REJECTED": "Turned down. Final.",
            "ACCEPTED": "Offered the job. Final.",
            "WITHDRAWN": "Taken back by the applicant (or an admin). Final.",
        },
    )
    ApiKeyStatus = described(
        entities.ApiKeyStatus,
        "ApiKeyStatus",
        "Whether an API key still authenticates.",
        {
            "ACTIVE": "It authenticates its bearer with its role.",
            "REVOKED": "Refused as UNAUTHENTICATED from the request after revokeApiKey; kept for the record.",
        },
    )
    WebhookDeliveryStatus = described(
        DeliveryStatus,
        "WebhookDeliveryStatus",
        "Where one event's delivery to one webhook endpoint stands.",
        {
            "PENDING": "Not yet answered with a 2xx: attempted at `nextAttemptAt` (the retry schedule).",
            "DELIVERED": "The endpoint answered 2xx. redeliverWebhook sends it again.",
            "FAILED": "The endpoint answered a final 4xx (not 408 or 429), or the retry schedule ran out. "
            "redeliverWebhook tries again.",
        },
    )


@strawberry.enum(
    description="A list's direction: ASC (oldest first by date, A to Z by name) or DESC (newest first, Z to A)."
)
class SortOrder(Enum):
    ASC = strawberry.enum_value("asc", description="Oldest first by date; A to Z by name.")
    DESC = strawberry.enum_value("desc", description="Newest first by date; Z to A by name.")


@strawberry.enum(description="What `Organization.employees` is ordered by; `order` picks the direction.")
class EmployeeOrder(Enum):
    HIRED_AT = strawberry.enum_value("hiredAt", description="By `hiredAt`, then employee id for the same instant.")
    NAME = strawberry.enum_value(
        "name",
        description="Alphabetically: by last name, then first name, both compared without case or accents "
        "(NFKD, combining marks dropped, casefolded), then by employee id for equal names.",
    )

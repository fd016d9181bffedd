"""Organization and its BillingSubscription."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

import strawberry

from datastore.kinds import entities
from datastore.signin import identity_providers
from datastore.table import retention
from datastore.values import names
from datastore.values.ids import OrgId
from datastore.webhooks import endpoints as webhook_store
from graphql_api.execution import ids, loaders
from graphql_api.execution.errors import bad_input, not_found
from graphql_api.execution.loaders import ListFetch
from graphql_api.request.context import RequestContext
from graphql_api.schema import permissions
from graphql_api.schema.types.api_key import ApiKey, api_keys_of_org
from graphql_api.schema.types.audit_event import AuditEvent
from graphql_api.schema.types.connection import DEFAULT_PAGE_SIZE, After, Connection, First, paginate
from graphql_api.schema.types.department import Department
from graphql_api.schema.types.employee import Employee
from graphql_api.schema.types.identity_provider import IdentityProvider
from graphql_api.schema.types.job_posting import JobPosting
from graphql_api.schema.types.node import Node
from graphql_api.schema.types.scalars import EmployeeOrder, JobPostingStatus, OrganizationStatus, Plan, SortOrder
from graphql_api.schema.types.webhook import WebhookEndpoint

Info = strawberry.Info[RequestContext, None]


@dataclass(frozen=True, slots=True)
class Subscribed:
    """An organisation's subscription once read: None inside when it has none."""

    subscription: entities.Subscription | None


# Not named "Subscription": SDL tools would take a type of that name for the subscription root.
@strawberry.type(
    description="The organisation's billing subscription: its plan, seats and renewal. Every member can read "
    "it; `billingCustomerId` is for admins only."
)
class BillingSubscription(Node):
    plan: Plan = strawberry.field(description="The plan being paid for.")
    seats: int = strawberry.field(description="How many employees the plan covers.")
    renews_at: datetime | None = strawberry.field(
        description="When the subscription next renews (is billed); null when it does not renew."
    )
    billing_customer: strawberry.Private[str | None]

    @strawberry.field(
        description="The organisation's customer id at the billing provider; null when it has none. Admins "
        "only: anyone else gets FORBIDDEN (this field null, the rest of the answer intact)."
    )
    def billing_customer_id(self, info: Info) -> str | None:
        permissions.check_billing(info.context)
        return self.billing_customer

    @classmethod
    def of(cls, subscription: entities.Subscription) -> BillingSubscription:
        return cls(
            # The id keeps the type's former name, so ids issued before the rename still resolve.
            id=strawberry.ID(ids.encode("Subscription", subscription.org_id)),
            plan=subscription.plan,
            seats=subscription.seats,
            billing_customer=subscription.billing_customer_id,
            renews_at=subscription.renews_at,
        )


@strawberry.type(
    description="A customer of the platform (a tenant) and the root of all its data. Its members see only "
    "their own organisation; platform operators list organisations but read none of their data."
)
class Organization(Node):
    org_id: strawberry.Private[str]
    # Known up front (the platform's list, createOrganization) or read on first use.
    known: strawberry.Private[entities.Organization | None]
    # The subscription is its own item, read only when a field shows it.
    known_subscription: strawberry.Private[Subscribed | None] = None

    @classmethod
    def of(cls, organization: entities.Organization, subscription: entities.Subscription | None = None) -> Organization:
        return cls(
            id=strawberry.ID(ids.encode("Organization", organization.org_id)),
            org_id=organization.org_id,
            known=organization,
            known_subscription=Subscribed(subscription),
        )

    @classmethod
    def of_caller(cls, org_id: str) -> Organization:
        """The caller's own organisation, before its item is read.

        Its lists need only its id, so they start at once, in the same round trip as the
        organisation's own item (which the active-caller check reads anyway): a query such as
        ``organization { departments { ... } }`` costs one wave per list level, no more.
        """
        return cls(id=strawberry.ID(ids.encode("Organization", org_id)), org_id=org_id, known=None)

    async def _loaded(self, info: Info) -> entities.Organization:
        if self.known is None:
            found = await info.context.loaders.organization.get(self.org_id)
            if found is None:
                raise not_found("Organization")
            self.known = found
        return self.known

    @strawberry.field(description="The organisation's name, 1 to 100 characters.")
    async def name(self, info: Info) -> str:
        return (await self._loaded(info)).name

    @strawberry.field(description="The organisation's price plan.")
    async def plan(self, info: Info) -> Plan:
        return (await self._loaded(info)).plan

    @strawberry.field(description="ACTIVE, or SUSPENDED (its members' requests are refused).")
    async def status(self, info: Info) -> OrganizationStatus:
        return (await self._loaded(info)).status

    @strawberry.field(description="When the organisation was created on the platform.")
    async def created_at(self, info: Info) -> datetime:
        return (await self._loaded(info)).created_at

    @strawberry.field(
        description="How many days each of its audit events is kept after it happened (then the table's TTL "
        "deletes it): its own setting (setAuditRetention), or the platform's default when it set none."
    )
    async def audit_retention_days(self, info: Info) -> int:
        default = info.context.session.services.datastore.audit_retention_days
        return retention.days_of(await self._loaded(info), default)

    @strawberry.field(description="Admins and platform operators: the email domains it owns, sorted.")
    async def email_domains(self, info: Info) -> list[str]:
        permissions.check_email_domains(info.context)
        return list((await self._loaded(info)).email_domains)

    @strawberry.field(
        description="Admins only: the organisation's own OpenID provider, through which its people sign in; null "
        "when it has none (they sign in through the platform's provider)."
    )
    async def identity_provider(self, info: Info) -> IdentityProvider | None:
        permissions.check_identity_provider(info.context)
        session = info.context.session
        found = await session.run(identity_providers.get_identity_provider, session.tenant_table(), OrgId(self.org_id))
        return None if found is None else IdentityProvider.of(found)

    @strawberry.field(description="Its billing subscription; null when it has none.")
    async def subscription(self, info: Info) -> BillingSubscription | None:
        if self.known_subscription is None:
            self.known_subscription = Subscribed(await info.context.loaders.subscription.get(self.org_id))
        found = self.known_subscription.subscription
        return None if found is None else BillingSubscription.of(found)

    @strawberry.field(description="Its departments, in department-id order (the order they were created).")
    async def departments(
        self, info: Info, first: First = DEFAULT_PAGE_SIZE, after: After = None
    ) -> Connection[Department]:
        return await paginate(info, loaders.departments_of_org, "Organization.departments", Department.of, first, after)

    @strawberry.field(
        description="Every employee, ACTIVE or INACTIVE, by `hiredAt` (the default) or by name; with `search`, "
        "those whose first or last name starts with it, by name. Each page is one DynamoDB Query."
    )
    async def employees(
        self,
        info: Info,
        first: First = DEFAULT_PAGE_SIZE,
        after: After = None,
        order: Annotated[
            SortOrder,
            strawberry.argument(
                description="ASC: earliest hire first, or A to Z by name; DESC: latest hire first, or Z to A. "
                "A cursor only continues the order (and search) it came from."
            ),
        ] = SortOrder.ASC,
        search: Annotated[
            str | None,
            strawberry.argument(
                description="Only employees whose first name or last name starts with this text, ignoring case "
                f"and accents (Ålice, alice and ALICE match alike), each once, by name. 1 to {names.SEARCH_MAX} "
                "characters, leading and trailing spaces ignored; blank, longer, or with control or invisible "
                "characters: BAD_USER_INPUT."
            ),
        ] = None,
        order_by: Annotated[
            EmployeeOrder | None,
            strawberry.argument(
                description="HIRED_AT or NAME. Omitted: HIRED_AT, or NAME with `search` (a search is only "
                "listed by name; `search` with HIRED_AT is BAD_USER_INPUT)."
            ),
        ] = None,
    ) -> Connection[Employee]:
        if search is not None:
            if order_by is EmployeeOrder.HIRED_AT:
                raise bad_input("orderBy", "a search lists by NAME only; omit orderBy or pass NAME")
            prefix: str | None = names.search(search)
        else:
            prefix = "" if order_by is EmployeeOrder.NAME else None
        fetch: ListFetch = loaders.employees_of_org
        parent, name = None, f"Organization.employees:{order.name}"
        if prefix is not None:
            # The folded prefix is the list's parent: its partition, and part of what binds a cursor.
            fetch, parent, name = loaders.employees_by_name, prefix, f"{name}:NAME:{prefix}"
        return await paginate(
            info, fetch, name, Employee.of, first, after, parent=parent, descending=order is SortOrder.DESC
        )

    @strawberry.field(
        description="Job postings, newest first. Employees must pass `status: OPEN`; without it the list "
        "holds every status and is for managers and admins (an employee gets FORBIDDEN)."
    )
    async def job_postings(
        self,
        info: Info,
        status: Annotated[
            JobPostingStatus | None,
            strawberry.argument(
                description="OPEN lists open postings only, newest published first; omit it for every "
                "posting. DRAFT and CLOSED are BAD_USER_INPUT (list them all and filter)."
            ),
        ] = None,
        first: First = DEFAULT_PAGE_SIZE,
        after: After = None,
    ) -> Connection[JobPosting] | None:
        if status is not None and status is not entities.JobStatus.OPEN:
            raise bad_input("status", "can only be OPEN; omit it to list jobs of every status")
        if status is None:
            permissions.check_all_jobs(info.context)
        fetch, name = (loaders.jobs_of_org, "ALL") if status is None else (loaders.open_jobs_of_org, "OPEN")
        return await paginate(
            info, fetch, f"Organization.jobPostings:{name}", JobPosting.of, first, after, descending=True
        )

    @strawberry.field(
        description="Every successful write in the organisation, newest first. Admins only: anyone else "
        "gets FORBIDDEN (this field null, the rest of the answer intact)."
    )
    async def audit_log(
        self, info: Info, first: First = DEFAULT_PAGE_SIZE, after: After = None
    ) -> Connection[AuditEvent] | None:  # nullable: a denial nulls this field, not the organization
        permissions.check_audit_trail(info.context)
        return await paginate(
            info, loaders.audit_events_of_org, "Organization.auditLog", AuditEvent.of, first, after, descending=True
        )

    @strawberry.field(
        description="The organisation's webhook endpoints (at most 20), in the order they were created; never their "
        "secrets. Admins only: anyone else gets FORBIDDEN (this field null, the rest of the answer intact)."
    )
    async def webhook_endpoints(self, info: Info) -> list[WebhookEndpoint] | None:
        permissions.check_webhooks(info.context)
        session = info.context.session
        found = await session.run(webhook_store.list_endpoints, session.tenant_table())
        return [WebhookEndpoint.of(endpoint) for endpoint in found]

    @strawberry.field(
        description="The organisation's API keys, ACTIVE and REVOKED, in the order they were created; never their "
        "secrets. Admins only: anyone else gets FORBIDDEN (this field null, the rest of the answer intact)."
    )
    async def api_keys(
        self, info: Info, first: First = DEFAULT_PAGE_SIZE, after: After = None
    ) -> Connection[ApiKey] | None:
        permissions.check_api_keys(info.context)
        return await paginate(info, api_keys_of_org, "Organization.apiKeys", ApiKey.of, first, after)

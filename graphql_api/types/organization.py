"""Organization and its Subscription."""

from __future__ import annotations

from datetime import datetime

import strawberry

from datastore import entities
from datastore.organizations import OrganizationWithSubscription
from graphql_api import ids, loaders, permissions
from graphql_api.context import RequestContext
from graphql_api.errors import bad_input, forbidden, not_found
from graphql_api.types.audit_event import AuditEvent
from graphql_api.types.connection import DEFAULT_PAGE_SIZE, Connection, paginate
from graphql_api.types.department import Department
from graphql_api.types.employee import Employee
from graphql_api.types.job_posting import JobPosting
from graphql_api.types.node import Node
from graphql_api.types.scalars import JobPostingStatus, OrganizationStatus, Plan, SortOrder

Info = strawberry.Info[RequestContext, None]


@strawberry.type(name="Subscription", description="The organisation's plan and billing.")
class Subscription(Node):
    plan: Plan
    seats: int
    renews_at: datetime | None
    billing_customer: strawberry.Private[str | None]

    @strawberry.field(description="Admins only.")
    def billing_customer_id(self, info: Info) -> str | None:
        permissions.check_billing(info.context)
        return self.billing_customer

    @classmethod
    def of(cls, subscription: entities.Subscription) -> Subscription:
        return cls(
            id=strawberry.ID(ids.encode("Subscription", subscription.org_id)),
            plan=subscription.plan,
            seats=subscription.seats,
            billing_customer=subscription.billing_customer_id,
            renews_at=subscription.renews_at,
        )


@strawberry.type
class Organization(Node):
    org_id: strawberry.Private[str]
    # Known up front (the platform's list, createOrganization) or read on first use.
    known: strawberry.Private[OrganizationWithSubscription | None]

    @classmethod
    def of(cls, organization: entities.Organization, subscription: entities.Subscription | None = None) -> Organization:
        return cls(
            id=strawberry.ID(ids.encode("Organization", organization.org_id)),
            org_id=organization.org_id,
            known=OrganizationWithSubscription(organization, subscription),
        )

    @classmethod
    def of_caller(cls, org_id: str) -> Organization:
        """The caller's own organisation, before its item is read.

        Its lists need only its id, so they start at once, in the same round trip as the
        organisation's own item (which the active-caller check reads anyway): a query such as
        ``organization { departments { ... } }`` costs one wave per list level, no more.
        """
        return cls(id=strawberry.ID(ids.encode("Organization", org_id)), org_id=org_id, known=None)

    async def _loaded(self, info: Info) -> OrganizationWithSubscription:
        if self.known is None:
            found = await info.context.session.loaders.organization.get(self.org_id)
            if found is None:
                raise not_found("Organization")
            self.known = found
        return self.known

    @strawberry.field
    async def name(self, info: Info) -> str:
        return (await self._loaded(info)).organization.name

    @strawberry.field
    async def plan(self, info: Info) -> Plan:
        return (await self._loaded(info)).organization.plan

    @strawberry.field
    async def status(self, info: Info) -> OrganizationStatus:
        return (await self._loaded(info)).organization.status

    @strawberry.field
    async def created_at(self, info: Info) -> datetime:
        return (await self._loaded(info)).organization.created_at

    @strawberry.field
    async def subscription(self, info: Info) -> Subscription | None:
        found = (await self._loaded(info)).subscription
        return None if found is None else Subscription.of(found)

    @strawberry.field
    async def departments(
        self, info: Info, first: int = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> Connection[Department]:
        return await paginate(
            info.context,
            loaders.departments_of_org,
            parent=None,
            name="Organization.departments",
            first=first,
            after=after,
            descending=False,
            convert=Department.of,
        )

    @strawberry.field(description="Every employee (active or not), by hire date.")
    async def employees(
        self,
        info: Info,
        first: int = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        order: SortOrder = SortOrder.ASC,
    ) -> Connection[Employee]:
        return await paginate(
            info.context,
            loaders.employees_of_org,
            parent=None,
            name=f"Organization.employees:{order.name}",
            first=first,
            after=after,
            descending=order is SortOrder.DESC,
            convert=Employee.of,
        )

    @strawberry.field(description="Job postings, newest first: all of them, or with status OPEN only the open ones.")
    async def job_postings(
        self,
        info: Info,
        status: JobPostingStatus | None = None,
        first: int = DEFAULT_PAGE_SIZE,
        after: str | None = None,
    ) -> Connection[JobPosting] | None:
        if status is not None and status is not entities.JobStatus.OPEN:
            raise bad_input("status", "can only be OPEN; omit it to list jobs of every status")
        if status is None:
            permissions.check_all_jobs(info.context)
        fetch = loaders.jobs_of_org if status is None else loaders.open_jobs_of_org
        return await paginate(
            info.context,
            fetch,
            parent=None,
            name=f"Organization.jobPostings:{'ALL' if status is None else 'OPEN'}",
            first=first,
            after=after,
            descending=True,
            convert=JobPosting.of,
        )

    @strawberry.field(description="Admins only: every successful write, newest first.")
    async def audit_log(
        self, info: Info, first: int = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> Connection[AuditEvent]:
        if not permissions.is_admin(info.context):
            raise forbidden("only admins read the audit log")
        return await paginate(
            info.context,
            loaders.audit_events_of_org,
            parent=None,
            name="Organization.auditLog",
            first=first,
            after=after,
            descending=True,
            convert=AuditEvent.of,
        )

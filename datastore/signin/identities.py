"""Sign-in: which organisation and employee an email belongs to (AP4, before any tenant)."""

from __future__ import annotations

from datastore.kinds import layout
from datastore.kinds.entities import Employee, Identity, IdentityProvider, Organization
from datastore.table.scoped import Table
from datastore.values import validation
from datastore.values.ids import EmployeeId


async def find_identity(table: Table, email: str) -> Identity | None:
    """One GetItem on the platform-wide identity item; ``table`` has the SignInScope."""
    item = await table.get(layout.IDENTITY.key_at(validation.email(email)))
    return None if item is None else layout.IDENTITY.read(item)


async def organization_and_employee(table: Table, emp_id: EmployeeId) -> tuple[Organization | None, Employee | None]:
    """What an identity names, read together: one BatchGetItem; ``table`` has its TenantScope."""
    org_id = table.tenant.org_id
    organization, employee = await table.batch_get(
        [layout.ORGANIZATION.key_at(org_id), layout.EMPLOYEE.key_at(org_id, emp_id)]
    )
    return (
        None if organization is None else layout.ORGANIZATION.read(organization),
        None if employee is None else layout.EMPLOYEE.read(employee),
    )


async def sign_in_records(
    table: Table, emp_id: EmployeeId
) -> tuple[Organization | None, Employee | None, IdentityProvider | None]:
    """What signing an employee in reads: their organisation, their record and the organisation's
    own identity provider, if any (it decides which provider may sign them in). One BatchGetItem;
    ``table`` has their TenantScope."""
    org_id = table.tenant.org_id
    organization, employee, provider = await table.batch_get(
        [
            layout.ORGANIZATION.key_at(org_id),
            layout.EMPLOYEE.key_at(org_id, emp_id),
            layout.IDENTITY_PROVIDER.key_at(org_id),
        ]
    )
    return (
        None if organization is None else layout.ORGANIZATION.read(organization),
        None if employee is None else layout.EMPLOYEE.read(employee),
        None if provider is None else layout.IDENTITY_PROVIDER.read(provider),
    )

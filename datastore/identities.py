"""Sign-in: which organisation and employee an email belongs to (AP4, before any tenant)."""

from __future__ import annotations

from datastore import layout, validation
from datastore.entities import Employee, Identity, Organization
from datastore.ids import EmployeeId
from datastore.table import Table


def find_identity(table: Table, email: str) -> Identity | None:
    """One GetItem on the platform-wide identity item; ``table`` has the SignInScope."""
    item = table.get(layout.IDENTITY.key_at(validation.email(email)))
    return None if item is None else layout.IDENTITY.read(item)


def organization_and_employee(table: Table, emp_id: EmployeeId) -> tuple[Organization | None, Employee | None]:
    """What an identity names, read together: one BatchGetItem; ``table`` has its TenantScope."""
    org_id = table.tenant.org_id
    organization, employee = table.batch_get(
        [layout.ORGANIZATION.key_at(org_id), layout.EMPLOYEE.key_at(org_id, emp_id)]
    )
    return (
        None if organization is None else layout.ORGANIZATION.read(organization),
        None if employee is None else layout.EMPLOYEE.read(employee),
    )

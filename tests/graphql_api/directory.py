"""A tenant with a real directory (departments full of employees), for the work-bound tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from datastore.aws.client import AsyncDynamo
from datastore.dev.seed import Bulk
from datastore.kinds.entities import Employee, Plan
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope
from datastore.tenants import organizations
from datastore.values import ids
from tests.blocking import run
from tests.conftest import unique_domain

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DIRECTORY = """{ organization { departments(first: 10) { edges { node { name
  employees(first: 50) { edges { node { email firstName lastName role status hiredAt } } } } } } } }"""


@dataclass(frozen=True)
class Directory:
    admin: Employee
    departments: int
    employees_each: int


def write_directory(
    client: DynamoDBClient, dynamo: AsyncDynamo, table_name: str, departments: int = 5, employees_each: int = 40
) -> Directory:
    domain = unique_domain()
    org, admin = run(
        organizations.create_organization(
            Table(dynamo, table_name, PlatformScope()),
            name=f"Directory {ids.new_id()[-6:]}",
            plan=Plan.PRO,
            email_domains=(domain,),
            admin_email=f"admin@{domain}",
            admin_first_name="Ada",
            admin_last_name="Admin",
        )
    )
    bulk = Bulk(org.org_id)
    for d in range(departments):
        department = bulk.department(f"Department {d:02}", employees_each)
        for n in range(employees_each):
            bulk.employee(department, d * employees_each + n)
    run(bulk.write(Table(dynamo, table_name, PlatformScope())))
    return Directory(admin, departments, employees_each)

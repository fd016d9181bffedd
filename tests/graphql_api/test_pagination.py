"""Paging through a 120-employee department returns every employee exactly once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datastore.aws.client import AsyncDynamo
from datastore.dev.seed import Bulk
from datastore.kinds.entities import Plan
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope
from datastore.tenants import organizations
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import unique_domain
from tests.graphql_api.fixtures import Api

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PAGE = (
    "query($id: ID!, $first: Int!, $after: String) { department(id: $id) { employees(first: $first, after: $after) "
    "{ edges { cursor node { id } } pageInfo { hasNextPage endCursor } } } }"
)


def test_department_employees__every_page__each_employee_once(
    api: Api, client: DynamoDBClient, dynamo: AsyncDynamo, table_name: str
) -> None:
    org, admin = run(
        organizations.create_organization(
            Table(dynamo, table_name, PlatformScope()),
            name="Paging",
            plan=Plan.PRO,
            email_domains=[domain := unique_domain()],
            admin_email=f"admin@{domain}",
            admin_first_name="Ada",
            admin_last_name="Admin",
        )
    )
    bulk = Bulk(org.org_id)
    department = bulk.department("Big", 120)
    wanted = [ids.encode("Employee", bulk.employee(department, n).emp_id) for n in range(120)]
    run(bulk.write(Table(dynamo, table_name, PlatformScope())))
    caller = api.as_(admin)
    seen: list[str] = []
    after: str | None = None
    pages = 0
    while True:
        data = caller.data(PAGE, {"id": ids.encode("Department", department.dept_id), "first": 50, "after": after})
        connection = data["department"]["employees"]
        seen += [edge["node"]["id"] for edge in connection["edges"]]
        pages += 1
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
        assert after == connection["edges"][-1]["cursor"]
    assert pages == 3
    assert len(seen) == len(set(seen)) == 120
    assert seen == wanted  # membership sort keys follow the ULIDs, minted in hire order

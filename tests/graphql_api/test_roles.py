"""Field-level rules of SPEC 7 over HTTP: a refused field is null plus FORBIDDEN, nothing more."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.kinds.entities import Employee
from datastore.tenants import employees
from graphql_api.auth.tokens import issue_token
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.security_world import World, build_world

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture
def world(tenant: Tenant) -> World:
    return build_world(tenant)


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


EMPLOYEE_APPLICATIONS = """query($id: ID!) { employee(id: $id) { email applications { edges { node { id } } } } }"""
JOB_APPLICATIONS = """query($id: ID!) { jobPosting(id: $id) { title applications { edges { node { id } } } } }"""
APPLICATION = """query($id: ID!) { application(id: $id) { id status } }"""
NODE_APPLICATION = """query($id: ID!) { node(id: $id) { id ... on Application { status } } }"""


def employee_apps(api: Api, caller: Employee, target: Employee) -> dict[str, Any]:
    return api.as_(caller).query(EMPLOYEE_APPLICATIONS, {"id": ids.encode("Employee", target.emp_id)})


def test_employee_applications__own__visible(api: Api, world: World) -> None:
    body = employee_apps(api, world.employee, world.employee)
    assert "errors" not in body
    assert len(body["data"]["employee"]["applications"]["edges"]) == 1


def test_employee_applications__someone_else__forbidden_field_only(api: Api, world: World) -> None:
    body = employee_apps(api, world.employee, world.other)
    assert body["data"]["employee"] == {"email": world.other.email, "applications": None}
    assert codes(body) == ["FORBIDDEN"]
    assert body["errors"][0]["path"] == ["employee", "applications"]


def test_employee_applications__manager_of_someone_else__forbidden(api: Api, world: World) -> None:
    body = employee_apps(api, world.manager, world.employee)
    assert body["data"]["employee"]["applications"] is None
    assert codes(body) == ["FORBIDDEN"]


def test_employee_applications__admin__sees_all(api: Api, world: World) -> None:
    body = employee_apps(api, world.admin, world.other)
    assert "errors" not in body
    assert len(body["data"]["employee"]["applications"]["edges"]) == 2


def job_apps(api: Api, caller: Employee, job_id: str) -> dict[str, Any]:
    return api.as_(caller).query(JOB_APPLICATIONS, {"id": ids.encode("JobPosting", job_id)})


def test_job_applications__employee__forbidden(api: Api, world: World) -> None:
    body = job_apps(api, world.employee, world.j1.job_id)
    assert body["data"]["jobPosting"] == {"title": "Engineer", "applications": None}
    assert codes(body) == ["FORBIDDEN"]


def test_job_applications__manager_of_the_department__visible(api: Api, world: World) -> None:
    body = job_apps(api, world.manager, world.j1.job_id)
    assert "errors" not in body
    assert len(body["data"]["jobPosting"]["applications"]["edges"]) == 2


def test_job_applications__manager_of_another_department__forbidden(api: Api, world: World) -> None:
    body = job_apps(api, world.manager, world.j2.job_id)
    assert body["data"]["jobPosting"]["applications"] is None
    assert codes(body) == ["FORBIDDEN"]


def test_job_applications__admin__visible(api: Api, world: World) -> None:
    assert "errors" not in job_apps(api, world.admin, world.j2.job_id)


@pytest.mark.parametrize("query", [APPLICATION, NODE_APPLICATION])
@pytest.mark.parametrize(
    ("caller", "application", "allowed"),
    [
        ("employee", "a_e_j1", True),
        ("employee", "a_f_j1", False),
        ("manager", "a_f_j1", True),
        ("manager", "a_f_j2", False),
        ("admin", "a_f_j2", True),
        ("other", "a_f_j2", True),
    ],
)
def test_application__by_id(api: Api, world: World, query: str, caller: str, application: str, allowed: bool) -> None:
    app = getattr(world, application)
    body = api.as_(getattr(world, caller)).query(query, {"id": ids.encode("Application", app.job_id, app.app_id)})
    root = "application" if query is APPLICATION else "node"
    if allowed:
        assert "errors" not in body
        assert body["data"][root]["status"] == "APPLIED"
    else:
        assert body["data"] == {root: None}
        assert codes(body) == ["FORBIDDEN"]


def test_jobs__employee_sees_open_jobs_only(api: Api, world: World) -> None:
    client = api.as_(world.employee)
    open_jobs = client.data("{ organization { jobPostings(status: OPEN) { edges { node { title } } } } }")
    assert {e["node"]["title"] for e in open_jobs["organization"]["jobPostings"]["edges"]} == {
        "Engineer",
        "Account Executive",
    }
    every = client.query("{ organization { name jobPostings { edges { node { title } } } } }")
    assert every["data"]["organization"]["jobPostings"] is None
    assert every["data"]["organization"]["name"] == world.tenant.organization.name
    assert codes(every) == ["FORBIDDEN"]
    draft_id = ids.encode("JobPosting", world.j3.job_id)
    draft = client.query("query($id: ID!) { jobPosting(id: $id) { title } }", {"id": draft_id})
    assert draft["data"] == {"jobPosting": None}
    assert codes(draft) == ["FORBIDDEN"]


def test_jobs__manager_sees_every_job(api: Api, world: World) -> None:
    data = api.as_(world.manager).data("{ organization { jobPostings { edges { node { title } } } } }")
    assert len(data["organization"]["jobPostings"]["edges"]) == 3


@pytest.mark.parametrize(("caller", "allowed"), [("employee", False), ("manager", False), ("admin", True)])
def test_billing_customer_id__admins_only(api: Api, world: World, caller: str, allowed: bool) -> None:
    body = api.as_(getattr(world, caller)).query("{ organization { subscription { plan billingCustomerId } } }")
    subscription = body["data"]["organization"]["subscription"]
    assert subscription["plan"] == "PRO"
    if allowed:
        assert "errors" not in body
    else:
        assert subscription["billingCustomerId"] is None
        assert codes(body) == ["FORBIDDEN"]


def test_platform__lists_organizations_but_sees_no_tenant_data(api: Api, world: World) -> None:
    assert "errors" not in api.platform.query("{ organizations(first: 1) { edges { node { name } } } }")
    body = api.platform.query("{ me { email } organization { name } }")
    assert body["data"] == {"me": None, "organization": None}
    assert codes(body) == ["FORBIDDEN", "FORBIDDEN"]


def test_tenant_caller__cannot_list_organizations(api: Api, world: World) -> None:
    body = api.as_(world.admin).query("{ organizations { edges { node { name } } } }")
    assert body.get("data") is None or body["data"].get("organizations") is None
    assert codes(body) == ["FORBIDDEN"]


def test_inactive_employee__refused_with_a_valid_token(api: Api, world: World) -> None:
    client = api.as_(world.employee)
    assert "errors" not in client.query("{ me { email } }")
    run(employees.terminate_employee(world.tenant.table, world.employee.emp_id))
    body = client.query("{ me { email } }")
    assert body.get("data") is None
    assert codes(body) == ["UNAUTHENTICATED"]
    assert body["errors"][0]["extensions"]["reason"] == "ACCOUNT_INACTIVE"


def test_suspended_organization__refused_with_a_valid_token(api: Api, world: World, client: DynamoDBClient) -> None:
    table = world.tenant.table
    client.update_item(
        TableName=table.name,
        Key={"PK": {"S": f"ORG#{world.tenant.org_id}"}, "SK": {"S": "#METADATA"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "suspended"}},
    )
    department = ids.encode("Department", world.d1.dept_id)
    body = api.as_(world.admin).query("query($id: ID!) { department(id: $id) { name } }", {"id": department})
    assert body.get("data") is None
    assert codes(body) == ["UNAUTHENTICATED"]
    assert body["errors"][0]["extensions"]["reason"] == "ACCOUNT_INACTIVE"


def test_stale_role__refused(api: Api, world: World) -> None:
    token = issue_token(api.settings, subject=world.employee.emp_id, org_id=world.tenant.org_id, role="admin")
    body = api.as_(world.employee).with_token(token).query("{ me { email } }")
    assert body.get("data") is None
    assert codes(body) == ["UNAUTHENTICATED"]
    assert body["errors"][0]["extensions"]["reason"] == "ROLE_CHANGED"

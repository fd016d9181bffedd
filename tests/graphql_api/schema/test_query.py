"""Root fields over HTTP, on the demo organisations."""

from __future__ import annotations

from typing import Any

import pytest

from graphql_api.execution import ids
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api, Demo, GraphQLClient

ALICE = "alice@acme.co"
BOB = "bob@acme.co"
DAVE = "dave@acme.co"
HANK = "hank@globex.example"


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


def test_me__returns_the_caller(api: Api, tenant: Tenant) -> None:
    data = api.admin_of(tenant).data("{ me { email role status } }")
    assert data["me"] == {"email": tenant.admin.email, "role": "ADMIN", "status": "ACTIVE"}


def test_me__without_token__is_unauthenticated(anonymous: GraphQLClient) -> None:
    body = anonymous.query("{ me { email } }")
    assert body["data"] == {"me": None}
    assert codes(body) == ["UNAUTHENTICATED"]
    assert body["errors"][0]["extensions"]["reason"] == "TOKEN_MISSING"


def test_organization__with_subscription(api: Api, demo: Demo) -> None:
    data = api.as_(demo.person(ALICE)).data("{ organization { id name plan status subscription { plan seats } } }")
    org = data["organization"]
    assert org["name"] == "Acme Corp"
    assert (org["plan"], org["status"]) == ("PRO", "ACTIVE")
    assert org["subscription"] == {"plan": "PRO", "seats": 250}
    assert ids.decode(org["id"]).parts == (demo.person(ALICE).org_id,)


def test_organization__is_the_callers_own(api: Api, demo: Demo) -> None:
    data = api.as_(demo.person(HANK)).data("{ organization { name } }")
    assert data["organization"]["name"] == "Globex Inc"


def test_employee__by_global_id(api: Api, demo: Demo) -> None:
    bob = demo.person(BOB)
    data = api.as_(demo.person(ALICE)).data(
        "query($id: ID!) { employee(id: $id) { id firstName lastName role version } }",
        {"id": ids.encode("Employee", bob.emp_id)},
    )
    assert data["employee"] == {
        "id": ids.encode("Employee", bob.emp_id),
        "firstName": "Bob",
        "lastName": "Builder",
        "role": "MANAGER",
        "version": bob.version,
    }


def test_employee_by_email(api: Api, demo: Demo) -> None:
    client = api.as_(demo.person(ALICE))
    query = "query($e: String!) { employeeByEmail(email: $e) { firstName } }"
    assert client.data(query, {"e": "Dave@Acme.co"})["employeeByEmail"] == {"firstName": "Dave"}
    # Another organisation's employee is not found, exactly like an unknown address.
    assert client.data(query, {"e": HANK})["employeeByEmail"] is None
    assert client.data(query, {"e": "nobody@acme.co"})["employeeByEmail"] is None


def test_employee_by_email__malformed__is_bad_user_input(api: Api, demo: Demo) -> None:
    body = api.as_(demo.person(ALICE)).query('{ employeeByEmail(email: "not-an-email") { id } }')
    assert codes(body) == ["BAD_USER_INPUT"]


def test_department_and_job_posting_and_application__by_id(api: Api, demo: Demo) -> None:
    client = api.as_(demo.person(ALICE))
    dave = demo.person(DAVE)
    apps = client.data(
        "query($id: ID!) { employee(id: $id) { applications { edges { node { id status "
        "jobPosting { id title department { id name } } } } } } }",
        {"id": ids.encode("Employee", dave.emp_id)},
    )["employee"]["applications"]["edges"]
    reviewing = next(e["node"] for e in apps if e["node"]["status"] == "REVIEWING")
    job = reviewing["jobPosting"]
    assert job["title"] == "Senior Engineer"
    assert client.data("query($id: ID!) { jobPosting(id: $id) { title status } }", {"id": job["id"]})["jobPosting"] == {
        "title": "Senior Engineer",
        "status": "OPEN",
    }
    assert client.data("query($id: ID!) { department(id: $id) { name headcount } }", {"id": job["department"]["id"]})[
        "department"
    ] == {"name": "Engineering", "headcount": 4}
    assert client.data(
        "query($id: ID!) { application(id: $id) { status employee { email } } }", {"id": reviewing["id"]}
    )["application"] == {"status": "REVIEWING", "employee": {"email": DAVE}}


@pytest.mark.parametrize("type_name", ["Employee", "Department", "JobPosting", "Organization", "BillingSubscription"])
def test_node__resolves_every_type(api: Api, demo: Demo, type_name: str) -> None:
    client = api.as_(demo.person(ALICE))
    org = client.data(
        "{ organization { id subscription { id } departments(first: 1) { edges { node { id } } } "
        "employees(first: 1) { edges { node { id } } } jobPostings(first: 1) { edges { node { id } } } } }"
    )["organization"]
    global_id = {
        "Organization": org["id"],
        "BillingSubscription": org["subscription"]["id"],
        "Department": org["departments"]["edges"][0]["node"]["id"],
        "Employee": org["employees"]["edges"][0]["node"]["id"],
        "JobPosting": org["jobPostings"]["edges"][0]["node"]["id"],
    }[type_name]
    node = client.data("query($id: ID!) { node(id: $id) { __typename id } }", {"id": global_id})["node"]
    assert node == {"__typename": type_name, "id": global_id}


def test_ids__unknown_or_wrong_type__resolve_as_null(api: Api, demo: Demo) -> None:
    client = api.as_(demo.person(ALICE))
    bob = ids.encode("Employee", demo.person(BOB).emp_id)
    unknown = ids.encode("Employee", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert client.data("query($id: ID!) { department(id: $id) { id } }", {"id": bob})["department"] is None
    assert client.data("query($id: ID!) { employee(id: $id) { id } }", {"id": unknown})["employee"] is None
    assert client.data("query($id: ID!) { node(id: $id) { id } }", {"id": unknown})["node"] is None


def test_ids__not_an_id__is_bad_user_input(api: Api, demo: Demo) -> None:
    body = api.as_(demo.person(ALICE)).query('{ employee(id: "%%%") { id } }')
    assert codes(body) == ["BAD_USER_INPUT"]

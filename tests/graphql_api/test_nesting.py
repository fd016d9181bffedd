"""Organization -> Departments -> Employees -> Applications (and job postings), nested, on the demo organisations."""

from __future__ import annotations

from tests.graphql_api.fixtures import Api, Demo


def nodes(connection: dict) -> list[dict]:
    return [edge["node"] for edge in connection["edges"]]


def test_organization_departments_employees_applications_job(api: Api, demo: Demo) -> None:
    data = api.as_(demo.person("alice@acme.co")).data(
        "{ organization { departments(first: 10) { edges { node { name headcount employees(first: 10) { edges { node { "
        "email applications(first: 10) { edges { node { status jobPosting { title } } } } } } } } } } } }"
    )
    departments = {d["name"]: d for d in nodes(data["organization"]["departments"])}
    assert set(departments) == {"Engineering", "Sales", "People Ops", "Finance"}
    for department in departments.values():
        assert department["headcount"] == len(department["employees"]["edges"])
    engineering = {e["email"]: e for e in nodes(departments["Engineering"]["employees"])}
    assert set(engineering) == {"bob@acme.co", "dave@acme.co", "erin@acme.co", "ivan@acme.co"}
    # Newest first: Dave applied to Senior Engineer before Platform Engineer.
    assert [(a["status"], a["jobPosting"]["title"]) for a in nodes(engineering["dave@acme.co"]["applications"])] == [
        ("WITHDRAWN", "Platform Engineer"),
        ("REVIEWING", "Senior Engineer"),
    ]


def test_organization_open_job_postings_applications_employee(api: Api, demo: Demo) -> None:
    data = api.as_(demo.person("alice@acme.co")).data(
        "{ organization { jobPostings(status: OPEN) { edges { node { title status "
        "applications { edges { node { status employee { email } } } } } } } } }"
    )
    jobs = nodes(data["organization"]["jobPostings"])
    # Newest first, open only: the closed HR Coordinator and the draft are absent.
    assert [j["title"] for j in jobs] == ["Account Executive", "Platform Engineer", "Senior Engineer"]
    assert {j["status"] for j in jobs} == {"OPEN"}
    account = jobs[0]
    assert [(a["employee"]["email"], a["status"]) for a in nodes(account["applications"])] == [
        ("heidi@acme.co", "APPLIED"),
        ("frank@acme.co", "ACCEPTED"),
    ]


def test_organization_all_job_postings(api: Api, demo: Demo) -> None:
    data = api.as_(demo.person("alice@acme.co")).data(
        "{ organization { jobPostings { edges { node { title status } } } } }"
    )
    assert nodes(data["organization"]["jobPostings"]) == [
        {"title": "Finance Analyst", "status": "DRAFT"},
        {"title": "HR Coordinator", "status": "CLOSED"},
        {"title": "Account Executive", "status": "OPEN"},
        {"title": "Platform Engineer", "status": "OPEN"},
        {"title": "Senior Engineer", "status": "OPEN"},
    ]


def test_employee_department_manager_and_applications_job(api: Api, demo: Demo) -> None:
    data = api.as_(demo.person("dave@acme.co")).data(
        "{ me { department { name manager { email } } applications { edges { node { jobPosting { title } } } } } }"
    )
    me = data["me"]
    assert me["department"] == {"name": "Engineering", "manager": {"email": "bob@acme.co"}}
    assert [a["jobPosting"]["title"] for a in nodes(me["applications"])] == [
        "Platform Engineer",
        "Senior Engineer",
    ]


def test_organization_employees__by_hire_date_both_orders(api: Api, demo: Demo) -> None:
    client = api.as_(demo.person("hank@globex.example"))
    query = "query($o: SortOrder!) { organization { employees(order: $o) { edges { node { email } } } } }"
    ascending = [e["email"] for e in nodes(client.data(query, {"o": "ASC"})["organization"]["employees"])]
    descending = [e["email"] for e in nodes(client.data(query, {"o": "DESC"})["organization"]["employees"])]
    assert ascending == ["ian@globex.example", "kate@globex.example", "hank@globex.example"]
    assert descending == list(reversed(ascending))

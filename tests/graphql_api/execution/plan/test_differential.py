"""Plans against graphql-core on the same requests: the same data and the same errors.

The bench's Q1-Q4 shapes, every example query of docs/api/queries.md as an admin, a manager
and an employee (whose answers carry FORBIDDEN fields), and queries with fragments, aliases,
@skip/@include, __typename, the Node interface and errors in non-null positions.
"""

from __future__ import annotations

import pytest

from bench.queries import Q1, Q2, Q3
from datastore.dev import demo as demo_data
from datastore.kinds.entities import Employee
from graphql_api.execution import ids
from tests.graphql_api.execution.plan.differential import Differential
from tests.graphql_api.fixtures import Demo
from tests.paths import EXAMPLE_QUERIES, graphql_blocks

ROLES = (demo_data.ACME_ADMIN, demo_data.ACME_MANAGER, "dave@acme.co")


def docs_queries() -> list[str]:
    queries = [block for block in graphql_blocks(EXAMPLE_QUERIES) if not block.lstrip().startswith("mutation")]
    assert len(queries) == 4, f"docs/api/queries.md should show 4 example queries, found {len(queries)}"
    return queries


def q4(demo: Demo) -> str:
    people = sorted(demo.people.values(), key=lambda e: e.emp_id)
    return (
        "{ "
        + " ".join(
            f'n{i}: node(id: "{ids.encode("Employee", e.emp_id)}") {{ ... on Employee {{ email }} }}'
            for i, e in enumerate(people[:12])
        )
        + " }"
    )


def assert_same(both: Differential, email: str, demo: Demo, query: str, variables: dict | None = None) -> dict:  # type: ignore[type-arg]
    runs = both.documents.planned_runs
    planned, general = both.compare(demo.person(email), query, variables)
    assert planned == general
    assert both.documents.planned_runs == runs + 1, "the query ran on graphql-core, not on a plan"
    return planned


@pytest.mark.parametrize("email", ROLES)
@pytest.mark.parametrize("query", [Q1, Q2, Q3], ids=["Q1", "Q2", "Q3"])
def test_bench_queries__every_role__same_answer(both: Differential, demo: Demo, email: str, query: str) -> None:
    assert_same(both, email, demo, query)


@pytest.mark.parametrize("email", ROLES)
def test_bench_q4__node_fragments__same_answer(both: Differential, demo: Demo, email: str) -> None:
    body = assert_same(both, email, demo, q4(demo))
    assert len(body["data"]) == 12


@pytest.mark.parametrize("email", ROLES)
@pytest.mark.parametrize("index", range(len(docs_queries())))
def test_docs_queries__every_role__same_answer(both: Differential, demo: Demo, email: str, index: int) -> None:
    assert_same(both, email, demo, docs_queries()[index])


def test_docs_directory__employee__forbidden_fields_same(both: Differential, demo: Demo) -> None:
    body = assert_same(both, "dave@acme.co", demo, docs_queries()[0])
    assert {e["extensions"]["code"] for e in body["errors"]} == {"FORBIDDEN"}


SHAPES = [
    # aliases, __typename, fragments and inline fragments on concrete types
    """query { org: organization { __typename ...Org } }
       fragment Org on Organization { name d: departments(first: 2) { edges { cursor node { ... on Department
       { __typename id name } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }""",
    # @skip / @include with variables and literals
    """query($yes: Boolean!, $no: Boolean!) { me { email @include(if: $yes) firstName @skip(if: $yes)
       lastName @include(if: $no) role @skip(if: false) department @include(if: true) { name } } }""",
    # the same field twice, merged, with different sub-selections
    "{ me { department { name } department { id manager { email } } } }",
    # connection arguments from variables, and an invalid one (BAD_USER_INPUT on a nullable field)
    """query($n: Int!) { organization { departments(first: $n) { edges { node { name
       employees(first: 1000) { edges { node { email } } } } } } } }""",
    # node on other types and on nothing
    """{ a: node(id: "bm90aGluZw") { id } b: node(id: "not an id") { id __typename } me { id } }""",
    # a non-null field's error propagates (applications of another: FORBIDDEN)
    """{ organization { departments(first: 5) { edges { node { employees(first: 5) { edges { node { email
       applications(first: 2) { edges { node { status } } } } } } } } } } }""",
    # job postings the employee may not list (FORBIDDEN at the root field)
    "{ organization { name jobPostings(first: 5) { edges { node { title status } } } } }",
    # name search and the directory by name, literal arguments; a bad search (BAD_USER_INPUT)
    """{ organization { s: employees(search: "Å", first: 3, order: DESC) { edges { cursor node { firstName } }
       pageInfo { hasNextPage endCursor } } n: employees(orderBy: NAME, first: 4) { edges { node { lastName } } }
       h: employees(orderBy: HIRED_AT, first: 2) { edges { node { email } } }
       bad: employees(search: " ") { edges { node { id } } } } }""",
]

SEARCHES = """query($search: String, $orderBy: EmployeeOrder, $first: Int!) { organization {
  employees(search: $search, orderBy: $orderBy, first: $first) {
    edges { node { firstName lastName department { name } } } pageInfo { hasNextPage } } } }"""


@pytest.mark.parametrize(
    "variables",
    [
        {"search": "b", "first": 2},
        {"search": "BOB", "orderBy": "NAME", "first": 5},
        {"orderBy": "NAME", "first": 50},
        {"search": "x" * 17, "first": 5},
        {"search": "b", "orderBy": "HIRED_AT", "first": 5},
    ],
)
def test_search_variables__same_answer(both: Differential, demo: Demo, variables: dict[str, object]) -> None:
    assert_same(both, "dave@acme.co", demo, SEARCHES, variables)


@pytest.mark.parametrize("email", ROLES)
@pytest.mark.parametrize("index", range(len(SHAPES)))
def test_shapes__every_role__same_answer(both: Differential, demo: Demo, email: str, index: int) -> None:
    assert_same(both, email, demo, SHAPES[index], {"yes": True, "no": False, "n": 3})


def test_skip_include__other_values__own_plan(both: Differential, demo: Demo) -> None:
    first = assert_same(both, "dave@acme.co", demo, SHAPES[1], {"yes": True, "no": False})
    second = assert_same(both, "dave@acme.co", demo, SHAPES[1], {"yes": False, "no": True})
    assert "email" in first["data"]["me"] and "email" not in second["data"]["me"]


def test_mutation__not_planned__graphql_core_runs_it(both: Differential, demo: Demo) -> None:
    fallbacks = both.documents.fallbacks
    planned, general = both.compare(
        demo.person("dave@acme.co"), 'mutation { terminateEmployee(input: {id: "x"}) { employee { id } } }'
    )
    assert planned == general
    assert both.documents.fallbacks == fallbacks  # mutations never reach the plan extension's check


def test_introspection__not_planned__graphql_core_answers(both: Differential, demo: Demo) -> None:
    fallbacks = both.documents.fallbacks
    planned, general = both.compare(
        demo.person("dave@acme.co"), '{ __type(name: "Employee") { name fields { name } } me { email } }'
    )
    assert planned == general
    assert planned["data"]["__type"]["name"] == "Employee"
    assert both.documents.fallbacks == fallbacks + 1


def test_variables_that_do_not_coerce__graphql_core_reports_them(both: Differential, demo: Demo) -> None:
    planned, general = both.compare(
        demo.person("dave@acme.co"), "query($n: Int!) { organization { departments(first: $n) { edges { cursor } } } }"
    )
    assert planned == general
    assert planned["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


def test_repeated_document__compiled_once(both: Differential, demo: Demo) -> None:
    query = "{ me { email firstName } }"
    assert_same(both, "dave@acme.co", demo, query)
    compiled = both.documents.plans_compiled
    assert_same(both, "erin@acme.co", demo, query)
    assert_same(both, "dave@acme.co", demo, query)
    assert both.documents.plans_compiled == compiled


ROLE_GUARDED = [
    # tests/graphql_api/test_roles.py's queries
    "query($id: ID!) { employee(id: $id) { email applications { edges { node { id } } } } }",
    "query($id: ID!) { jobPosting(id: $id) { title applications { edges { node { id } } } } }",
    "query($id: ID!) { application(id: $id) { id status } }",
    "query($id: ID!) { node(id: $id) { id ... on Application { status } } }",
]


def guarded_ids(both: Differential, demo: Demo) -> list[str]:
    """Ids of every kind the guarded queries take: employees, job postings, applications."""
    planned, _ = both.compare(
        demo.person(demo_data.ACME_ADMIN),
        "{ organization { jobPostings(first: 10) { edges { node { id applications(first: 3) { edges { node { id "
        "employee { id } } } } } } } } }",
    )
    found: list[str] = []
    for edge in planned["data"]["organization"]["jobPostings"]["edges"]:
        found.append(edge["node"]["id"])
        for application in edge["node"]["applications"]["edges"]:
            found += [application["node"]["id"], application["node"]["employee"]["id"]]
    return found


@pytest.mark.parametrize("email", ROLES)
@pytest.mark.parametrize("index", range(len(ROLE_GUARDED)))
def test_role_guarded_queries__every_role_and_id__same_answer(
    both: Differential, demo: Demo, email: str, index: int
) -> None:
    targets = guarded_ids(both, demo)
    assert len(targets) > 5
    codes: set[str] = set()
    for target in targets:
        body = assert_same(both, email, demo, ROLE_GUARDED[index], {"id": target})
        codes |= {error["extensions"]["code"] for error in body.get("errors", [])}
    if email == "dave@acme.co" and index != 3:
        assert "FORBIDDEN" in codes


# Every root field by id, which plans answer through the fields' declared loads (execution/fields.py):
# every kind of id, every role, another tenant's ids, misspelt ids, and errors beneath them.
BY_ID = """query($id: ID!) {
  node(id: $id) { __typename id
    ... on Employee { email department { name manager { email department { id } } } applications(first: 2) {
      edges { node { status } } } }
    ... on Department { name manager { email } }
    ... on JobPosting { title jobStatus: status department { name } }
    ... on Application { status employee { email } }
    ... on Organization { name }
    ... on BillingSubscription { plan seats billingCustomerId } }
  again: node(id: $id) { id }
  employee(id: $id) { email department { name } }
  department(id: $id) { name }
  jobPosting(id: $id) { title }
  application(id: $id) { status }
  me { email department { name } }
  organization { name }
}"""


def tenant_ids(person: Employee) -> list[str]:
    """An id of each kind readable by id without a list: ``person``, their department and tenant."""
    assert person.department_id is not None
    return [
        ids.encode("Employee", person.emp_id),
        ids.encode("Department", person.department_id),
        ids.encode("Organization", person.org_id),
        ids.encode("Subscription", person.org_id),
    ]


def by_id_targets(both: Differential, demo: Demo) -> list[str]:
    """An id of every kind, of both tenants, and ids that are not ids at all."""
    acme, globex = demo.person(demo_data.ACME_ADMIN), demo.person(demo_data.GLOBEX_ADMIN)
    targets = guarded_ids(both, demo)[:4] + tenant_ids(acme) + tenant_ids(globex)
    misspelt = ids.encode("Employee", acme.emp_id.lower())
    return [*targets, misspelt, ids.encode("Employee", "01" + "0" * 24), "not an id", ids.encode("Nothing", "x")]


@pytest.mark.parametrize("email", ROLES)
def test_by_id_roots__every_kind_of_id__same_answer(both: Differential, demo: Demo, email: str) -> None:
    codes: set[str] = set()
    typenames: set[str] = set()
    # The callers are Acme's: both executors run the same loads, so agreeing is not enough here.
    globex = set(tenant_ids(demo.person(demo_data.GLOBEX_ADMIN)))
    for target in by_id_targets(both, demo):
        body = assert_same(both, email, demo, BY_ID, {"id": target})
        codes |= {error["extensions"]["code"] for error in body.get("errors", [])}
        if target in globex:
            by_id = ("node", "again", "employee", "department", "jobPosting", "application")
            assert [body["data"][field] for field in by_id] == [None] * len(by_id), target
        if body["data"]["node"] is not None:
            typenames.add(body["data"]["node"]["__typename"])
    assert {"Employee", "Department", "Organization", "BillingSubscription"} <= typenames
    if email == demo_data.ACME_ADMIN:  # the others may not see some of the applications and postings
        assert {"JobPosting", "Application"} <= typenames
    assert "BAD_USER_INPUT" in codes
    if email == "dave@acme.co":
        assert "FORBIDDEN" in codes

"""To-one relations loaded for a whole page (graphql_api/schema/types/relations.py).

What a document selects on a connection's nodes is read once (fragments, aliases, skip and
include), and a page's relations load with one ``get_many`` per relation and level: the same
answers and calls as per-object loads, and nothing loaded that the query does not select.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from graphql import FieldNode, FragmentDefinitionNode, GraphQLObjectType, parse, visit
from graphql.language import Visitor

from datastore.aws import calls
from graphql_api.app import create_app
from graphql_api.execution import fields, ids
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.schema.executable import build_schema
from graphql_api.schema.types.application import Application
from graphql_api.schema.types.department import Department
from graphql_api.schema.types.employee import Employee
from graphql_api.schema.types.job_posting import JobPosting
from graphql_api.schema.types.relations import RelationPlan, Selection, declared_on
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory
from tests.graphql_api.fixtures import Api, Demo
from tests.graphql_api.live import serving, with_settings


def connection_plan(
    document: str, field: str, target: type[Any], variables: dict[str, Any] | None = None
) -> RelationPlan:
    """The plan for the first field named ``field`` in ``document``."""
    parsed = parse(document)
    fragments = {d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)}
    found: list[FieldNode] = []

    class Find(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            if node.name.value == field and not found:
                found.append(node)

    visit(parsed, Find())
    return Selection(fragments, variables or {}).connection_plan(target, found)


def named(plan: RelationPlan) -> dict[str, Any]:
    return {relation.field: named(inner) for relation, inner in plan}


def test_declared__each_relation__is_the_read_of_the_field_it_names() -> None:
    """A relation's ``field`` is the one name left in it: on the type that declares it, it names
    the GraphQL field whose declared read (the compiled plans') is that relation's, and every
    other field read so is ``id``."""
    schema = graphql_schema(build_schema([]))
    for owner in (Application, Department, Employee, JobPosting):
        declared = declared_on(owner)
        graphql_type = schema.get_type(owner.__name__)
        assert declared and isinstance(graphql_type, GraphQLObjectType)
        for relation in declared:
            read = fields.read_of(graphql_type.fields[relation.field])
            assert read is not None
            loaded = object()
            assert read(SimpleNamespace(related={relation: loaded})) is loaded
        with_reads = {name for name, field in graphql_type.fields.items() if fields.read_of(field) is not None}
        assert with_reads == {"id", *(relation.field for relation in declared)}


def test_plan__relations_under_node__nested() -> None:
    plan = connection_plan(
        "{ organization { jobPostings { edges { node { applications { edges { node { status "
        "employee { email department { name manager { email } } } } } } } } } } }",
        "applications",
        Application,
    )
    assert named(plan) == {"employee": {"department": {"manager": {}}}}


def test_plan__fragments_and_aliases__merged() -> None:
    plan = connection_plan(
        "{ organization { jobPostings { edges { node { applications { edges { node { "
        "...A ... on Application { job: jobPosting { title } } who: employee { email } } } } } } } } } "
        "fragment A on Application { employee { department { name } } }",
        "applications",
        Application,
    )
    assert named(plan) == {"employee": {"department": {}}, "jobPosting": {}}


def test_plan__skip_and_include__honoured() -> None:
    document = (
        "query($skip: Boolean!, $include: Boolean!) { organization { departments { edges { node { "
        "manager @skip(if: $skip) { email } employees { edges { node { department @include(if: $include) "
        "{ name } } } } } } } } }"
    )
    assert named(connection_plan(document, "departments", Department, {"skip": True, "include": True})) == {}
    assert named(connection_plan(document, "departments", Department, {"skip": False, "include": True})) == {
        "manager": {}
    }
    assert named(connection_plan(document, "employees", Employee, {"skip": False, "include": False})) == {}
    assert named(connection_plan(document, "employees", Employee, {"skip": False, "include": True})) == {
        "department": {}
    }


def test_plan__no_relation_selected__empty() -> None:
    plan = connection_plan(
        "{ organization { employees { pageInfo { endCursor } edges { cursor node { email role } } } } }",
        "employees",
        Employee,
    )
    assert plan == ()


OPEN_JOB_APPLICANTS = (
    "query($skip: Boolean!) { organization { jobPostings(status: OPEN) { edges { node { title "
    "applications { edges { node { status employee @skip(if: $skip) { email department { name } } } } } } } } } }"
)


def test_page__relations_loaded__same_answer_as_per_object(api: Api, demo: Demo) -> None:
    """Each application's applicant, read at the page level, equals the applicant read by id."""
    alice = api.as_(demo.person("alice@acme.co"))
    data = alice.data(OPEN_JOB_APPLICANTS, {"skip": False})
    applications = [
        application["node"]
        for job in data["organization"]["jobPostings"]["edges"]
        for application in job["node"]["applications"]["edges"]
    ]
    assert applications
    for application in applications:
        assert set(application["employee"]) == {"email", "department"}
    by_email = {a["employee"]["email"]: a["employee"] for a in applications}
    for email, employee in by_email.items():
        one = alice.data(
            "query($id: ID!) { employee(id: $id) { email department { name } } }",
            {"id": ids.encode("Employee", demo.person(email).emp_id)},
        )
        assert one["employee"] == employee


def test_page__relation_skipped__not_loaded(api: Api, demo: Demo) -> None:
    alice = api.as_(demo.person("alice@acme.co"))
    alice.data(OPEN_JOB_APPLICANTS, {"skip": True})  # warm: the same calls either way but for the skip
    with calls.listening() as skipped:
        data = alice.data(OPEN_JOB_APPLICANTS, {"skip": True})
    with calls.listening() as selected:
        alice.data(OPEN_JOB_APPLICANTS, {"skip": False})
    jobs = data["organization"]["jobPostings"]["edges"]
    nodes = [a["node"] for job in jobs for a in job["node"]["applications"]["edges"]]
    assert nodes and all(set(node) == {"status"} for node in nodes)
    # Skipped: the job list, its applications lists and the caller check (one BatchGetItem, in
    # the first wave); no employee batch.
    assert len(selected.waves()) == len(skipped.waves()) + 2  # employees, then their departments
    later = [call.operation for wave in skipped.waves()[1:] for call in wave]
    assert later and "BatchGetItem" not in later
    assert [call.operation for call in skipped.waves()[0]].count("BatchGetItem") == 1


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("query($id: ID!) { application(id: $id) { employee { email } jobPosting { title } } }", "application"),
        ("query($id: ID!) { node(id: $id) { ... on Application { employee { email } } } }", "node"),
    ],
)
def test_root_object__relations__loaded_on_demand(api: Api, demo: Demo, query: str, path: str) -> None:
    """An object no page built loads its relations through the loaders, as before."""
    alice = api.as_(demo.person("alice@acme.co"))
    data = alice.data(
        "{ organization { jobPostings(status: OPEN) { edges { node { applications(first: 1) { edges { node { id "
        "employee { email } } } } } } } } }"
    )
    first = next(
        job["node"]["applications"]["edges"][0]["node"]
        for job in data["organization"]["jobPostings"]["edges"]
        if job["node"]["applications"]["edges"]
    )
    answer = alice.data(query, {"id": first["id"]})[path]
    assert answer["employee"] == first["employee"]


def test_page__relation_load_fails__error_on_each_objects_field(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, demo: Demo
) -> None:
    """Past the call budget, the page-level employee batch fails: each application's
    ``employee`` is null with the error, as per-object loads answered; the pages stand."""
    alice = demo.person("alice@acme.co")
    budget = None
    for max_calls in (None, 0):
        settings = api_settings if max_calls is None else with_settings(api_settings, max_dynamodb_calls=budget)
        with serving(create_app(new_datastore(table_name), settings)) as http:
            caller = Api(http, settings).as_(alice)
            if max_calls is None:
                # Exactly the calls of the query without the relation: the relation's batch is one too many.
                budget = caller.query(OPEN_JOB_APPLICANTS, {"skip": True})["extensions"]["cost"]["requestCount"]
                continue
            body = caller.query(OPEN_JOB_APPLICANTS, {"skip": False})
    jobs = body["data"]["organization"]["jobPostings"]["edges"]
    applications = [a["node"] for job in jobs for a in job["node"]["applications"]["edges"]]
    assert applications and all(a["employee"] is None for a in applications)
    assert len(body["errors"]) == len(applications)
    for error in body["errors"]:
        assert error["path"][-1] == "employee"
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert error["extensions"]["limit"] == "dynamodbCalls"

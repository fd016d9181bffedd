"""errors: datastore errors become API errors in one place; a mutation's name its input path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

import httpx
import pytest

from datastore.errors import (
    Conflict,
    IdempotencyMismatch,
    InProgress,
    InvalidInput,
    NotFound,
    StaleVersion,
    Unavailable,
)
from datastore.kinds.entities import Employee
from datastore.tenants import applications, employees, jobs
from datastore.values.ids import new_id
from graphql_api.app import create_app
from graphql_api.execution import ids
from graphql_api.execution.errors import Code, translate, without_suggestions
from graphql_api.schema.mutations.input_paths import INPUT_PATHS
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.conftest import DatastoreFactory, Tenant, unique_domain
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.live import serving, with_settings
from tests.graphql_api.schema.mutations.documents import UNKNOWN_ULID, error, gid, open_job

# --- translate ----------------------------------------------------------------------------


def test_translate__invalid_input_without_paths__the_datastore_field() -> None:
    translated = translate(InvalidInput("first", "must be between 0 and 100"))
    assert translated is not None
    assert translated.extensions == {"code": "BAD_USER_INPUT", "field": "first"}
    assert str(translated) == "first: must be between 0 and 100"


def test_translate__invalid_input_with_paths__the_input_path() -> None:
    translated = translate(InvalidInput("email", "is not a valid email address"), INPUT_PATHS["createOrganization"])
    assert translated is not None
    assert translated.extensions == {"code": "BAD_USER_INPUT", "field": "input.adminEmail"}
    assert str(translated) == "input.adminEmail: is not a valid email address"


def test_translate__field_the_input_does_not_carry__the_whole_input() -> None:
    translated = translate(InvalidInput("department_id", "no such department"), INPUT_PATHS["terminateEmployee"])
    assert translated is not None
    assert translated.extensions == {"code": "BAD_USER_INPUT", "field": "input"}


def test_translate__idempotency_mismatch__input_idempotency_key() -> None:
    translated = translate(IdempotencyMismatch(), INPUT_PATHS["publishJobPosting"])
    assert translated is not None
    assert translated.extensions == {"code": "BAD_USER_INPUT", "field": "input.idempotencyKey"}


def test_translate__not_found_and_stale_version__their_codes() -> None:
    missing = translate(NotFound(Employee, new_id()))
    stale = translate(StaleVersion("changed", current_version=4))
    assert missing is not None and missing.extensions == {"code": "NOT_FOUND"}
    assert str(missing) == "Employee not found"
    assert stale is not None and stale.extensions == {"code": "CONFLICT", "currentVersion": 4}
    conflict = translate(Conflict("taken"))
    assert conflict is not None and conflict.code is Code.CONFLICT


def test_translate__unavailable__retryable_unavailable_naming_no_backend() -> None:
    translated = translate(Unavailable("throttled"))
    assert translated is not None
    assert translated.extensions == {"code": "UNAVAILABLE", "retryable": True}


def test_translate__first_attempt_in_progress__retryable_unavailable_with_its_reason() -> None:
    translated = translate(InProgress())
    assert translated is not None
    assert translated.extensions == {
        "code": "UNAVAILABLE",
        "retryable": True,
        "maybeWritten": True,
        "reason": "IN_PROGRESS",
    }
    assert "retry with the same idempotencyKey" in str(translated)


def test_translate__a_bug__none() -> None:
    assert translate(ValueError("a bug")) is None


# --- every mutation's validation failures over HTTP -------------------------------------------

# Each case: the caller and the input of one refused mutation (setup through the datastore).
Case = Callable[[Api, Tenant], tuple[GraphQLClient, dict[str, Any]]]


def _admin(**values: Any) -> Case:
    return lambda api, t: (api.admin_of(t), dict(values))


def _unknown(type_name: str) -> str:
    """A well-formed id of ``type_name`` that names nothing."""
    return ids.encode(type_name, UNKNOWN_ULID)


def _update_department(**values: Any) -> Case:
    return lambda api, t: (api.admin_of(t), {"id": gid(t.department()), **values})


def _inactive_manager(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
    gone = run(employees.terminate_employee(t.table, t.employee().emp_id))
    return api.admin_of(t), {"id": gid(t.department()), "managerId": gid(gone)}


def _new_employee(**values: Any) -> Case:
    def case(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
        person = {"email": t.email(f"n{new_id().lower()}"), "firstName": "N", "lastName": "E"}
        return api.admin_of(t), {**person, **values}

    return case


def _update_employee(**values: Any) -> Case:
    def case(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
        person = t.employee()
        return api.admin_of(t), {"id": gid(person), "expectedVersion": person.version, **values}

    return case


def _move_to_unknown(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
    return api.admin_of(t), {"id": gid(t.employee(t.department())), "departmentId": _unknown("Department")}


def _new_job(**values: Any) -> Case:
    return lambda api, t: (api.admin_of(t), {"departmentId": gid(t.department()), "title": "T", **values})


def _update_job(**values: Any) -> Case:
    def case(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
        job = open_job(t, t.department())
        return api.admin_of(t), {"id": gid(job), "expectedVersion": job.version, **values}

    return case


def _update_closed_job(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
    closed = run(jobs.close_job(t.table, open_job(t, t.department()).job_id))
    return api.admin_of(t), {"id": gid(closed), "expectedVersion": closed.version, "title": "Again"}


def _publish_open_job(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
    return api.admin_of(t), {"id": gid(open_job(t, t.department()))}


def _close_closed_job(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
    closed = run(jobs.close_job(t.table, open_job(t, t.department()).job_id))
    return api.admin_of(t), {"id": gid(closed)}


def _apply(**values: Any) -> Case:
    def case(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
        return api.as_(t.employee()), {"jobPostingId": gid(open_job(t, t.department())), **values}

    return case


def _withdraw_withdrawn(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
    person = t.employee()
    applied = run(applications.apply_to_job(t.table, open_job(t, t.department()).job_id, person.emp_id))
    withdrawn = run(applications.withdraw_application(t.table, applied.job_id, applied.app_id))
    return api.as_(person), {"id": gid(withdrawn)}


def _set_status(status: str) -> Case:
    def case(api: Api, t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
        applied = run(applications.apply_to_job(t.table, open_job(t, t.department()).job_id, t.employee().emp_id))
        return api.admin_of(t), {"id": gid(applied), "status": status}

    return case


def _new_organization(**values: Any) -> Case:
    def case(api: Api, _t: Tenant) -> tuple[GraphQLClient, dict[str, Any]]:
        domain = unique_domain()
        admin = {"adminEmail": f"o@{domain}", "adminFirstName": "A", "adminLastName": "B"}
        return api.platform, {"name": "Org", "plan": "FREE", "emailDomains": [domain], **admin, **values}

    return case


def _add_domain(domain: str) -> Case:
    return lambda api, t: (api.platform, {"orgId": ids.encode("Organization", t.org_id), "domain": domain})


BAD_KEY: Final = "has space"

# mutation, case, the input path extensions.field must name
CASES: Final[list[tuple[str, Case, str]]] = [
    ("createDepartment", _admin(name="  "), "input.name"),
    ("createDepartment", _admin(name="R", managerId=_unknown("Employee")), "input.managerId"),
    ("createDepartment", _admin(name="R", idempotencyKey=BAD_KEY), "input.idempotencyKey"),
    ("updateDepartment", _update_department(name="x" * 101), "input.name"),
    ("updateDepartment", _inactive_manager, "input.managerId"),
    ("updateDepartment", _update_department(), "input"),
    ("createEmployee", _new_employee(email="a@b@c.com"), "input.email"),
    ("createEmployee", _new_employee(firstName=" "), "input.firstName"),
    ("createEmployee", _new_employee(lastName="x" * 101), "input.lastName"),
    ("createEmployee", _new_employee(departmentId=_unknown("Department")), "input.departmentId"),
    ("updateEmployee", _update_employee(email="nope"), "input.email"),
    ("updateEmployee", _update_employee(lastName=""), "input.lastName"),
    ("updateEmployee", _update_employee(idempotencyKey=BAD_KEY), "input.idempotencyKey"),
    ("moveEmployee", _move_to_unknown, "input.departmentId"),
    (
        "terminateEmployee",
        lambda api, t: (api.admin_of(t), {"id": gid(t.employee()), "idempotencyKey": ""}),
        "input.idempotencyKey",
    ),
    ("createJobPosting", _new_job(title=" "), "input.title"),
    ("createJobPosting", _new_job(description="x" * 10_001), "input.description"),
    (
        "createJobPosting",
        lambda api, t: (api.admin_of(t), {"departmentId": _unknown("Department"), "title": "T"}),
        "input.departmentId",
    ),
    ("updateJobPosting", _update_job(title="x" * 201), "input.title"),
    ("updateJobPosting", _update_job(departmentId=_unknown("Department")), "input.departmentId"),
    ("updateJobPosting", _update_closed_job, "input.id"),
    ("publishJobPosting", _publish_open_job, "input.id"),
    ("closeJobPosting", _close_closed_job, "input.id"),
    ("applyToJob", _apply(idempotencyKey=BAD_KEY), "input.idempotencyKey"),
    ("applyToJob", lambda api, t: (api.as_(t.employee()), {"jobPostingId": "not an id"}), "input.jobPostingId"),
    ("withdrawApplication", _withdraw_withdrawn, "input.id"),
    ("setApplicationStatus", _set_status("WITHDRAWN"), "input.status"),
    ("setApplicationStatus", _set_status("ACCEPTED"), "input.status"),
    ("createOrganization", _new_organization(name=" "), "input.name"),
    ("createOrganization", _new_organization(adminEmail="not-an-email"), "input.adminEmail"),
    ("createOrganization", _new_organization(adminFirstName=""), "input.adminFirstName"),
    ("createOrganization", _new_organization(adminLastName="x" * 101), "input.adminLastName"),
    ("createOrganization", _new_organization(emailDomains=["no spaces allowed.example"]), "input.emailDomains"),
    ("addEmailDomain", _add_domain("bad domain"), "input.domain"),
    ("addEmailDomain", lambda api, t: (api.platform, {"orgId": "not an id", "domain": "ok.example"}), "input.orgId"),
    ("createApiKey", lambda api, t: (api.admin_of(t), {"name": " ", "role": "ADMIN"}), "input.name"),
    ("createApiKey", lambda api, t: (api.admin_of(t), {"name": "Sync", "role": "MANAGER"}), "input.role"),
    ("revokeApiKey", lambda api, t: (api.admin_of(t), {"id": "not an id"}), "input.id"),
    (
        "setIdentityProvider",
        lambda api, t: (api.admin_of(t), {"issuer": "ftp://x", "clientIds": ["a"]}),
        "input.issuer",
    ),
    (
        "setIdentityProvider",
        lambda api, t: (api.admin_of(t), {"issuer": "https://idp.example", "clientIds": []}),
        "input.clientIds",
    ),
    ("removeIdentityProvider", lambda api, t: (api.platform, {"organizationId": "not an id"}), "input.organizationId"),
    # A token not issued by POST /auth/token belongs to no session: name one by its refresh token.
    ("signOut", lambda api, t: (api.admin_of(t), {}), "input.refreshToken"),
    ("signOutEverywhere", lambda api, t: (api.admin_of(t), {"employeeId": "not an id"}), "input.employeeId"),
    ("erasePerson", lambda api, t: (api.admin_of(t), {"id": "not an id"}), "input.id"),
    ("setAuditRetention", lambda api, t: (api.admin_of(t), {"days": 1}), "input.days"),
    ("closeOrganization", lambda api, t: (api.platform, {"orgId": "not an id"}), "input.orgId"),
    (
        "createWebhookEndpoint",
        lambda api, t: (api.admin_of(t), {"url": "ftp://hooks.example/hr", "eventTypes": ["employee.*"]}),
        "input.url",
    ),
    (
        "createWebhookEndpoint",
        lambda api, t: (api.admin_of(t), {"url": "https://1.1.1.1/hr", "eventTypes": ["nope.*"]}),
        "input.eventTypes",
    ),
    ("updateWebhookEndpoint", lambda api, t: (api.admin_of(t), {"id": "not an id"}), "input.id"),
    ("deleteWebhookEndpoint", lambda api, t: (api.admin_of(t), {"id": "not an id"}), "input.id"),
    ("rotateWebhookSecret", lambda api, t: (api.admin_of(t), {"id": "not an id"}), "input.id"),
    ("redeliverWebhook", lambda api, t: (api.admin_of(t), {"deliveryId": "not an id"}), "input.deliveryId"),
]

# Mutations whose input type is shared rather than named after them.
INPUT_TYPES: Final = {
    "deleteWebhookEndpoint": "WebhookEndpointIdInput",
    "rotateWebhookSecret": "WebhookEndpointIdInput",
}


def _document(mutation: str) -> str:
    input_type = INPUT_TYPES.get(mutation, mutation[0].upper() + mutation[1:] + "Input")
    return f"mutation($input: {input_type}!) {{ {mutation}(input: $input) {{ __typename }} }}"


# Its invalid fields are per-row results, not errors (tests/graphql_api/schema/mutations/test_imports.py).
PER_ROW_ERRORS = {"importEmployees"}


def test_cases__cover_every_mutation(api: Api) -> None:
    fields = api.platform.data('{ __type(name: "Mutation") { fields { name } } }')["__type"]["fields"]
    assert {field["name"] for field in fields} - PER_ROW_ERRORS == {mutation for mutation, _, _ in CASES}


@pytest.mark.parametrize(("mutation", "case", "path"), CASES, ids=[f"{m}-{p}-{n}" for n, (m, _, p) in enumerate(CASES)])
def test_mutation_validation_failure__bad_user_input_naming_the_input_path(
    api: Api, tenant: Tenant, mutation: str, case: Case, path: str
) -> None:
    caller, values = case(api, tenant)
    body = caller.query(_document(mutation), {"input": values})
    found = error(body)
    assert found["extensions"] == {"code": "BAD_USER_INPUT", "field": path}
    assert found["message"].startswith(f"{path}: ")
    assert found["path"] == [mutation]


# --- suggestions: none when introspection is off -------------------------------------------

# Each makes graphql-core suggest a schema name: a field, an argument, a type, a subselection,
# an enum value in the document and in a variable, an input field in a variable.
SUGGESTED: Final = [
    ("{ organizaton { name } }", None),
    ("{ organization { departments(frist: 1) { edges { node { name } } } } }", None),
    ("query Typed($s: EmployeStatus) { __typename }", None),
    ("{ me }", None),
    ("{ organization { employees(orderBy: NAMEE) { edges { node { id } } } } }", None),
    (
        "query Ordered($o: EmployeeOrder) { organization { employees(orderBy: $o) { edges { node { id } } } } }",
        {"o": "NAMEE"},
    ),
    (
        "mutation Create($input: CreateDepartmentInput!) { createDepartment(input: $input) { __typename } }",
        {"input": {"name": "Ops", "managerld": "x"}},
    ),
]
SUGGESTED_IDS: Final = ["field", "argument", "type", "subselection", "enum-literal", "enum-variable", "input-field"]


@pytest.fixture(scope="module")
def no_introspection(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> Iterator[httpx.Client]:
    app = create_app(new_datastore(table_name), with_settings(api_settings, introspection=False))
    with serving(app) as http:
        yield http


@pytest.mark.parametrize(("query", "variables"), SUGGESTED, ids=SUGGESTED_IDS)
def test_suggestions__introspection_on__graphql_core_suggests(
    api: Api, tenant: Tenant, query: str, variables: dict[str, Any] | None
) -> None:
    """The documents do make graphql-core suggest (with introspection on, development's default)."""
    body = api.admin_of(tenant).query(query, variables)
    assert any("Did you mean" in error["message"] for error in body["errors"]), body


@pytest.mark.parametrize("caller", ["anonymous", "admin"])
@pytest.mark.parametrize(("query", "variables"), SUGGESTED, ids=SUGGESTED_IDS)
def test_suggestions__introspection_off__none_for_any_caller(
    no_introspection: httpx.Client,
    api: Api,
    tenant: Tenant,
    caller: str,
    query: str,
    variables: dict[str, Any] | None,
) -> None:
    headers = {"Authorization": f"Bearer {api.token(tenant.admin)}"} if caller == "admin" else {}
    body = no_introspection.post("/graphql", json={"query": query, "variables": variables}, headers=headers).json()
    assert body["errors"], body
    for refusal in body["errors"]:
        assert "Did you mean" not in refusal["message"], refusal
        # The document's own mistakes do not validate; the variables' do not coerce.
        expected = "GRAPHQL_VALIDATION_FAILED" if variables is None else "BAD_USER_INPUT"
        assert refusal["extensions"]["code"] == expected, refusal
        assert refusal["message"].strip(), refusal  # the error itself is still told


def test_suggestions__introspection_off__the_error_is_kept(no_introspection: httpx.Client) -> None:
    body = no_introspection.post("/graphql", json={"query": "{ organizaton { name } }"}).json()
    assert [error["message"] for error in body["errors"]] == ["Cannot query field 'organizaton' on type 'Query'."]


@pytest.mark.parametrize(
    ("message", "plain"),
    [
        (
            "Cannot query field 'x' on type 'Query'. Did you mean 'me' or 'organization'?",
            "Cannot query field 'x' on type 'Query'.",
        ),
        (
            "Value 'NAMEE' does not exist in 'EmployeeOrder' enum. Did you mean the enum value 'NAME'?",
            "Value 'NAMEE' does not exist in 'EmployeeOrder' enum.",
        ),
        (
            "Field 'me' of type 'Employee!' must have a selection of subfields. Did you mean 'me { ... }'?",
            "Field 'me' of type 'Employee!' must have a selection of subfields.",
        ),
        ("no suggestion here", "no suggestion here"),
    ],
)
def test_without_suggestions__the_suggestion_alone_removed(message: str, plain: str) -> None:
    assert without_suggestions(message) == plain


# --- the client's document: parse, validation, variables ---------------------------------------


@pytest.mark.parametrize(
    ("query", "variables", "code"),
    [
        # Not GraphQL at all, or cut short.
        ("{ me { email }", None, "GRAPHQL_PARSE_FAILED"),
        ("query { me { email } } }", None, "GRAPHQL_PARSE_FAILED"),
        # GraphQL, but not of this schema.
        ("{ me { salary } }", None, "GRAPHQL_VALIDATION_FAILED"),
        ("query($n: Int) { me { email } }", None, "GRAPHQL_VALIDATION_FAILED"),  # unused variable
        ("{ organization { departments(first: 1) { edges { node } } } }", None, "GRAPHQL_VALIDATION_FAILED"),
        # Valid, but its variables do not coerce: input the user can fix.
        (
            "query($n: Int!) { organization { departments(first: $n) { edges { cursor } } } }",
            {"n": "x"},
            "BAD_USER_INPUT",
        ),
        ("query($n: Int!) { organization { departments(first: $n) { edges { cursor } } } }", {}, "BAD_USER_INPUT"),
    ],
)
def test_client_document__coded_by_where_it_failed(
    api: Api, tenant: Tenant, query: str, variables: dict[str, Any] | None, code: str
) -> None:
    body = api.admin_of(tenant).query(query, variables)
    assert "data" not in body or body["data"] is None, body
    assert [error["extensions"]["code"] for error in body["errors"]] == [code], body


def test_validation_failure__same_document_twice__same_code(api: Api, tenant: Tenant) -> None:
    """A refused document is never cached (execution/documents.py): its second refusal is coded the same."""
    client = api.admin_of(tenant)
    for _ in range(2):
        body = client.query("{ me { salary } }")
        assert [error["extensions"] for error in body["errors"]] == [{"code": "GRAPHQL_VALIDATION_FAILED"}]


def test_introspection_off__validation_failed(no_introspection: httpx.Client) -> None:
    body = no_introspection.post("/graphql", json={"query": '{ __type(name: "Query") { name } }'}).json()
    assert [error["extensions"] for error in body["errors"]] == [{"code": "GRAPHQL_VALIDATION_FAILED"}]


def test_limit_and_validation_failure_together__each_its_own_code(api: Api, tenant: Tenant) -> None:
    sixteen = " ".join(f"a{i}: email" for i in range(16))
    body = api.admin_of(tenant).query("{ me { " + sixteen + " salary } }")
    codes = {error["extensions"].get("limit", "-"): error["extensions"]["code"] for error in body["errors"]}
    assert codes == {"aliases": "BAD_USER_INPUT", "-": "GRAPHQL_VALIDATION_FAILED"}, body

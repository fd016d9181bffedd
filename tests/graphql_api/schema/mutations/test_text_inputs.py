"""Every text input refuses control, formatting and invisible characters and text past its limit, over HTTP.

The rules live in ``datastore/values/validation.py`` and ``datastore/values/invisible.py`` (tested there
character by character); these tests prove each mutation's text inputs, and every email
input, go through them and that a refusal names the field and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from datastore.tenants import jobs
from datastore.values import validation
from tests.blocking import run
from tests.conftest import Tenant, unique_domain
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.graphql_api.schema.mutations.documents import (
    CREATE_DEPARTMENT,
    CREATE_EMPLOYEE,
    CREATE_JOB,
    CREATE_ORGANIZATION,
    UPDATE_DEPARTMENT,
    UPDATE_EMPLOYEE,
    UPDATE_JOB,
    audit_actions,
    error,
    gid,
)

NUL = "Null\x00byte"
ANSI = "\x1b[31mRed\x1b[0m"
BIDI_OVERRIDE = "invoice\u202egpj.exe"
BIDI_ISOLATE = "left\u2066right\u2069"
C1 = "next\x85line"
ZERO_WIDTH = "zero\u200bwidth"
NONCHARACTER = "Ada\uffff"
BAD_TEXTS = {
    "nul": NUL,
    "ansi": ANSI,
    "rlo": BIDI_OVERRIDE,
    "isolate": BIDI_ISOLATE,
    "c1": C1,
    "zwsp": ZERO_WIDTH,
    "noncharacter": NONCHARACTER,
}

Case = Callable[[Tenant, str], tuple[str, dict[str, Any]]]


def create_department(t: Tenant, value: str) -> tuple[str, dict[str, Any]]:
    return CREATE_DEPARTMENT, {"name": value}


def update_department(t: Tenant, value: str) -> tuple[str, dict[str, Any]]:
    return UPDATE_DEPARTMENT, {"id": gid(t.department()), "name": value}


def create_employee_first_name(t: Tenant, value: str) -> tuple[str, dict[str, Any]]:
    return CREATE_EMPLOYEE, {"email": t.email("clean"), "firstName": value, "lastName": "L"}


def update_employee_last_name(t: Tenant, value: str) -> tuple[str, dict[str, Any]]:
    return UPDATE_EMPLOYEE, {"id": gid(t.employee()), "expectedVersion": 1, "lastName": value}


def create_job_title(t: Tenant, value: str) -> tuple[str, dict[str, Any]]:
    return CREATE_JOB, {"departmentId": gid(t.department()), "title": value}


def create_job_description(t: Tenant, value: str) -> tuple[str, dict[str, Any]]:
    return CREATE_JOB, {"departmentId": gid(t.department()), "title": "Welder", "description": value}


def update_job_title(t: Tenant, value: str) -> tuple[str, dict[str, Any]]:
    job = run(jobs.create_job(t.table, department_id=t.department().dept_id, title="Welder"))
    return UPDATE_JOB, {"id": gid(job), "expectedVersion": 1, "title": value}


CASES: dict[str, tuple[Case, str, int]] = {
    "createDepartment.name": (create_department, "name", validation.NAME_MAX),
    "updateDepartment.name": (update_department, "name", validation.NAME_MAX),
    "createEmployee.firstName": (create_employee_first_name, "firstName", validation.NAME_MAX),
    "updateEmployee.lastName": (update_employee_last_name, "lastName", validation.NAME_MAX),
    "createJobPosting.title": (create_job_title, "title", validation.TITLE_MAX),
    "createJobPosting.description": (create_job_description, "description", validation.DESCRIPTION_MAX),
    "updateJobPosting.title": (update_job_title, "title", validation.TITLE_MAX),
}


@pytest.mark.parametrize("case", CASES)
def test_text_input__control_or_formatting_characters__bad_input_naming_the_field(
    api: Api, tenant: Tenant, case: str
) -> None:
    build, field, _ = CASES[case]
    admin = api.admin_of(tenant)
    for name, value in BAD_TEXTS.items():
        document, variables = build(tenant, value)
        before = audit_actions(tenant)
        body = admin.query(document, {"input": variables})
        assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": f"input.{field}"}, name
        assert "control or formatting" in error(body)["message"], name
        assert audit_actions(tenant) == before, name  # nothing was written


@pytest.mark.parametrize("case", CASES)
def test_text_input__one_past_its_limit__bad_input_at_the_limit_accepted(api: Api, tenant: Tenant, case: str) -> None:
    build, field, limit = CASES[case]
    admin = api.admin_of(tenant)
    document, variables = build(tenant, "x" * (limit + 1))
    body = admin.query(document, {"input": variables})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": f"input.{field}"}
    assert f"at most {limit}" in error(body)["message"]
    document, variables = build(tenant, "x" * limit)
    assert "errors" not in admin.query(document, {"input": variables})


def test_job_description__line_breaks_and_tabs__kept(api: Api, tenant: Tenant) -> None:
    text = "Duties:\n\t- weld\r\n\t- inspect"
    document, variables = create_job_description(tenant, text)
    data = api.admin_of(tenant).data(document, {"input": variables})
    assert data["createJobPosting"]["jobPosting"]["description"] == text


def test_employee_by_email__control_character__bad_input(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(
        "query($e: String!) { employeeByEmail(email: $e) { id } }", {"e": f"a\x00{tenant.admin.email}"}
    )
    assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"]


# --- invisible characters ----------------------------------------------------------------------

SINGLE_LINE = [case for case in CASES if not case.endswith(".description")]
INVISIBLE_ONLY = {"hangul-filler": "\u3164", "choseong-filler": "\u115f", "braille-blank": "\u2800"}


@pytest.mark.parametrize("case", SINGLE_LINE)
def test_single_line_input__only_invisible_characters__bad_input_blank(api: Api, tenant: Tenant, case: str) -> None:
    build, field, _ = CASES[case]
    admin = api.admin_of(tenant)
    for name, value in INVISIBLE_ONLY.items():
        document, variables = build(tenant, value)
        before = audit_actions(tenant)
        body = admin.query(document, {"input": variables})
        assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": f"input.{field}"}, name
        assert error(body)["message"] == f"input.{field}: must not be blank: it holds only invisible characters"
        assert audit_actions(tenant) == before, name


@pytest.mark.parametrize("case", SINGLE_LINE)
def test_single_line_input__soft_hyphen_inside__bad_input_naming_it(api: Api, tenant: Tenant, case: str) -> None:
    build, field, _ = CASES[case]
    document, variables = build(tenant, "Ada\u00adLovelace")
    before = audit_actions(tenant)
    body = api.admin_of(tenant).query(document, {"input": variables})
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": f"input.{field}"}
    assert error(body)["message"] == f"input.{field}: must not contain invisible characters (U+00AD SOFT HYPHEN)"
    assert audit_actions(tenant) == before


def test_create_employee__emoji_and_ideographic_variants__stored_as_sent(api: Api, tenant: Tenant) -> None:
    first, last = "\U0001f469\u200d\U0001f4bb Ada", "\u845b\U000e0100\u98fe"
    variables = {"email": tenant.email("variants"), "firstName": first, "lastName": last}
    employee = api.admin_of(tenant).data(CREATE_EMPLOYEE, {"input": variables})["createEmployee"]["employee"]
    assert (employee["firstName"], employee["lastName"]) == (first, last)


def test_job_description__soft_hyphen__kept(api: Api, tenant: Tenant) -> None:
    text = "Maschinen\u00adbau"
    document, variables = create_job_description(tenant, text)
    data = api.admin_of(tenant).data(document, {"input": variables})
    assert data["createJobPosting"]["jobPosting"]["description"] == text


# --- RFC 5321 lengths on every email input -------------------------------------------------------

EmailCase = Callable[[Api, Tenant, str], tuple[GraphQLClient, str, dict[str, Any]]]
EMPLOYEE_BY_EMAIL = "query($email: String!) { employeeByEmail(email: $email) { id } }"


def create_employee_email(api: Api, t: Tenant, local: str) -> tuple[GraphQLClient, str, dict[str, Any]]:
    variables = {"input": {"email": t.email(local), "firstName": "F", "lastName": "L"}}
    return api.admin_of(t), CREATE_EMPLOYEE, variables


def update_employee_email(api: Api, t: Tenant, local: str) -> tuple[GraphQLClient, str, dict[str, Any]]:
    variables = {"input": {"id": gid(t.employee()), "expectedVersion": 1, "email": t.email(local)}}
    return api.admin_of(t), UPDATE_EMPLOYEE, variables


def create_organization_admin_email(api: Api, t: Tenant, local: str) -> tuple[GraphQLClient, str, dict[str, Any]]:
    domain = unique_domain()
    variables = {
        "input": {
            "name": "Initech",
            "plan": "PRO",
            "emailDomains": [domain],
            "adminEmail": f"{local}@{domain}",
            "adminFirstName": "Bill",
            "adminLastName": "Lumbergh",
        }
    }
    return api.platform, CREATE_ORGANIZATION, variables


def employee_by_email(api: Api, t: Tenant, local: str) -> tuple[GraphQLClient, str, dict[str, Any]]:
    return api.admin_of(t), EMPLOYEE_BY_EMAIL, {"email": t.email(local)}


EMAIL_CASES: dict[str, tuple[EmailCase, str]] = {
    "createEmployee.email": (create_employee_email, "input.email"),
    "updateEmployee.email": (update_employee_email, "input.email"),
    "createOrganization.adminEmail": (create_organization_admin_email, "input.adminEmail"),
    "employeeByEmail(email)": (employee_by_email, "email"),
}


# The 246 was before a 7-character domain; a test tenant's is 35, so 218 fills the 254.
@pytest.mark.parametrize("size", [65, 218], ids=["65", "218-the-whole-address-allows"])
@pytest.mark.parametrize("case", EMAIL_CASES)
def test_email_input__local_part_over_64_bytes__bad_input_naming_the_field(
    api: Api, tenant: Tenant, case: str, size: int
) -> None:
    build, field = EMAIL_CASES[case]
    client, document, variables = build(api, tenant, "a" * size)
    before = audit_actions(tenant)
    body = client.query(document, variables)
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": field}
    assert error(body)["message"] == f"{field}: must have at most 64 bytes before the @ (RFC 5321), not {size}"
    assert audit_actions(tenant) == before
    if case == "createOrganization.adminEmail":  # nothing written: its domain is still free
        domain = variables["input"]["adminEmail"].rpartition("@")[2]
        variables["input"]["adminEmail"] = f"boss@{domain}"
        assert "errors" not in client.query(document, variables)


@pytest.mark.parametrize("case", EMAIL_CASES)
def test_email_input__local_part_of_64_bytes__accepted(api: Api, tenant: Tenant, case: str) -> None:
    build, _ = EMAIL_CASES[case]
    client, document, variables = build(api, tenant, "a" * 64)
    assert "errors" not in client.query(document, variables)


IMPORT_EMAILS = """
mutation($input: ImportEmployeesInput!) {
  importEmployees(input: $input) { created failed results { status error { code field message } } }
}"""


def test_import_rows__local_part_over_64_bytes__that_row_fails_on_its_email(api: Api, tenant: Tenant) -> None:
    rows = [
        {"email": tenant.email("a" * 64), "firstName": "Ok", "lastName": "Row"},
        {"email": tenant.email("a" * 65), "firstName": "Long", "lastName": "Row"},
        {"email": tenant.email("b" * 218), "firstName": "Longer", "lastName": "Row"},
    ]
    payload = api.admin_of(tenant).data(IMPORT_EMAILS, {"input": {"rows": rows}})["importEmployees"]
    assert (payload["created"], payload["failed"]) == (1, 2)
    assert [r["error"] for r in payload["results"]] == [
        None,
        {
            "code": "BAD_USER_INPUT",
            "field": "input.rows.1.email",
            "message": "must have at most 64 bytes before the @ (RFC 5321), not 65",
        },
        {
            "code": "BAD_USER_INPUT",
            "field": "input.rows.2.email",
            "message": "must have at most 64 bytes before the @ (RFC 5321), not 218",
        },
    ]


@pytest.mark.parametrize("case", EMAIL_CASES)
def test_email_input__invisible_character__bad_input_naming_it(api: Api, tenant: Tenant, case: str) -> None:
    build, field = EMAIL_CASES[case]
    client, document, variables = build(api, tenant, "ali\u3164ce")
    body = client.query(document, variables)
    assert error(body)["extensions"] == {"code": "BAD_USER_INPUT", "field": field}
    assert error(body)["message"] == f"{field}: must not contain invisible characters (U+3164 HANGUL FILLER)"

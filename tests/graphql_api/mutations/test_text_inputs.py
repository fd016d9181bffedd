"""Every text input refuses control and formatting characters and text past its limit, over HTTP.

The rules live in ``datastore/validation.py`` (tested there character by character); these
tests prove each mutation's text inputs go through them and that a refusal names the field
and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from datastore import jobs, validation
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.graphql_api.mutations.documents import (
    CREATE_DEPARTMENT,
    CREATE_EMPLOYEE,
    CREATE_JOB,
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
BAD_TEXTS = {"nul": NUL, "ansi": ANSI, "rlo": BIDI_OVERRIDE, "isolate": BIDI_ISOLATE, "c1": C1, "zwsp": ZERO_WIDTH}

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
    job = jobs.create_job(t.table, department_id=t.department().dept_id, title="Welder")
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

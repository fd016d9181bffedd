"""erasePerson over HTTP: admins erase a terminated person; every type shows them as erased."""

from __future__ import annotations

from typing import Any

import pytest

from datastore.kinds.entities import Role
from datastore.tenants import employees
from datastore.values.ids import new_id
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import TenantFactory
from tests.datastore.lifecycle.complete import Complete, complete
from tests.graphql_api.fixtures import Api

ERASE = """
mutation($input: ErasePersonInput!) {
  erasePerson(input: $input) { employee { id email firstName lastName status erasedAt } itemsTouched alreadyErased }
}"""
APPLICATION = """
query($id: ID!) { application(id: $id) { status employee { id email firstName lastName erasedAt } } }"""
AUDIT = """{ organization { auditLog(first: 50) { edges { node {
  action entityId erasedAt changes { field before after } } } } } }"""


@pytest.fixture
def whole(make_tenant: TenantFactory) -> Complete:
    return complete(make_tenant())


def _erase(api: Api, whole: Complete, emp_id: str, as_: Any = None) -> dict[str, Any]:
    client = api.as_(as_) if as_ is not None else api.admin_of(whole.tenant)
    return client.query(ERASE, {"input": {"id": ids.encode("Employee", emp_id)}})


def _codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


def test_erase_person__a_tombstone__then_already_erased(api: Api, whole: Complete) -> None:
    first = _erase(api, whole, whole.leaver.emp_id)["data"]["erasePerson"]
    again = _erase(api, whole, whole.leaver.emp_id)["data"]["erasePerson"]

    shown = first["employee"]
    assert (shown["email"], shown["firstName"], shown["lastName"], shown["status"]) == ("", "", "", "INACTIVE")
    assert shown["erasedAt"] is not None
    assert first["itemsTouched"] > 0 and first["alreadyErased"] is False
    assert again["itemsTouched"] == 0 and again["alreadyErased"] is True
    assert again["employee"] == shown


def test_erase_person__the_application_shows_an_erased_applicant(api: Api, whole: Complete) -> None:
    _erase(api, whole, whole.leaver.emp_id)

    data = api.admin_of(whole.tenant).data(
        APPLICATION, {"id": ids.encode("Application", whole.job.job_id, whole.application.app_id)}
    )

    assert data["application"]["status"] == "APPLIED"
    applicant = data["application"]["employee"]
    assert applicant["id"] == ids.encode("Employee", whole.leaver.emp_id)
    assert (applicant["email"], applicant["firstName"], applicant["lastName"]) == ("", "", "")
    assert applicant["erasedAt"] is not None


def test_erase_person__the_audit_log_keeps_what_happened_without_values(api: Api, whole: Complete) -> None:
    _erase(api, whole, whole.leaver.emp_id)

    edges = api.admin_of(whole.tenant).data(AUDIT)["organization"]["auditLog"]["edges"]

    about = [edge["node"] for edge in edges if edge["node"]["entityId"] == whole.leaver.emp_id]
    assert [node["action"] for node in about] == ["employee.erase", "employee.terminate", "employee.create"]
    create = about[-1]
    assert create["erasedAt"] is not None
    assert {c["field"]: (c["before"], c["after"]) for c in create["changes"]}["lastName"] == (None, None)
    text = str(edges).lower()
    assert whole.leaver.email not in text and "leaverton" not in text


@pytest.mark.parametrize("role", [Role.EMPLOYEE, Role.MANAGER])
def test_erase_person__not_an_admin__forbidden(api: Api, whole: Complete, role: Role) -> None:
    caller = whole.tenant.employee(role=role)
    assert _codes(_erase(api, whole, whole.leaver.emp_id, as_=caller)) == ["FORBIDDEN"]
    assert run(employees.get_employee(whole.tenant.table, whole.leaver.emp_id)) == whole.leaver


def test_erase_person__an_active_employee__conflict(api: Api, whole: Complete) -> None:
    assert _codes(_erase(api, whole, whole.employee.emp_id)) == ["CONFLICT"]


def test_erase_person__unknown_or_another_organisations_employee__not_found(
    api: Api, whole: Complete, make_tenant: TenantFactory
) -> None:
    other = make_tenant("Other")
    assert _codes(_erase(api, whole, new_id())) == ["NOT_FOUND"]
    assert _codes(_erase(api, whole, other.admin.emp_id)) == ["NOT_FOUND"]

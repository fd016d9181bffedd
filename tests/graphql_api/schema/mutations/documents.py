"""The mutation documents and small helpers shared by the mutation suites."""

from __future__ import annotations

from typing import Any, Final

from datastore.kinds.entities import Application, Department, Employee, JobPosting, Role
from datastore.table.pagination import PageRequest
from datastore.tenants import departments, jobs
from datastore.writes import audit
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant

CREATE_DEPARTMENT: Final = """
mutation($input: CreateDepartmentInput!) {
  createDepartment(input: $input) { department { id name headcount manager { id } } }
}"""

UPDATE_DEPARTMENT: Final = """
mutation($input: UpdateDepartmentInput!) {
  updateDepartment(input: $input) { department { id name headcount manager { id } } }
}"""

CREATE_EMPLOYEE: Final = """
mutation($input: CreateEmployeeInput!) {
  createEmployee(input: $input) {
    employee { id email firstName lastName role status version department { id } }
    department { id headcount }
  }
}"""

UPDATE_EMPLOYEE: Final = """
mutation($input: UpdateEmployeeInput!) {
  updateEmployee(input: $input) { employee { id email firstName lastName role version } }
}"""

MOVE_EMPLOYEE: Final = """
mutation($input: MoveEmployeeInput!) {
  moveEmployee(input: $input) {
    employee { id version department { id } }
    fromDepartment { id headcount }
    toDepartment { id headcount }
  }
}"""

TERMINATE_EMPLOYEE: Final = """
mutation($input: TerminateEmployeeInput!) {
  terminateEmployee(input: $input) {
    employee { id status version terminatedAt }
    department { id headcount }
  }
}"""

JOB_FIELDS: Final = "id title description status version postedAt closedAt department { id }"

CREATE_JOB: Final = f"""
mutation($input: CreateJobPostingInput!) {{ createJobPosting(input: $input) {{ jobPosting {{ {JOB_FIELDS} }} }} }}"""

UPDATE_JOB: Final = f"""
mutation($input: UpdateJobPostingInput!) {{ updateJobPosting(input: $input) {{ jobPosting {{ {JOB_FIELDS} }} }} }}"""

PUBLISH_JOB: Final = f"""
mutation($input: PublishJobPostingInput!) {{ publishJobPosting(input: $input) {{ jobPosting {{ {JOB_FIELDS} }} }} }}"""

CLOSE_JOB: Final = f"""
mutation($input: CloseJobPostingInput!) {{ closeJobPosting(input: $input) {{ jobPosting {{ {JOB_FIELDS} }} }} }}"""

APPLICATION_FIELDS: Final = "id status submittedAt employee { id } jobPosting { id }"

APPLY: Final = f"""
mutation($input: ApplyToJobInput!) {{ applyToJob(input: $input) {{ application {{ {APPLICATION_FIELDS} }} }} }}"""

WITHDRAW: Final = f"""
mutation($input: WithdrawApplicationInput!) {{
  withdrawApplication(input: $input) {{ application {{ {APPLICATION_FIELDS} }} }}
}}"""

SET_STATUS: Final = f"""
mutation($input: SetApplicationStatusInput!) {{
  setApplicationStatus(input: $input) {{ application {{ {APPLICATION_FIELDS} }} }}
}}"""

CREATE_ORGANIZATION: Final = """
mutation($input: CreateOrganizationInput!) {
  createOrganization(input: $input) { organization { id name plan status } adminId }
}"""

ADD_EMAIL_DOMAIN: Final = """
mutation($input: AddEmailDomainInput!) {
  addEmailDomain(input: $input) { organization { id emailDomains } }
}"""

AUDIT_LOG: Final = """
query($first: Int!, $after: String) {
  organization {
    auditLog(first: $first, after: $after) {
      edges { cursor node { action entityType entityId actor { id } beforeVersion afterVersion
                            changes { field before after } occurredAt } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""

# A well-formed ULID that names nothing.
UNKNOWN_ULID: Final = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


def error(body: dict[str, Any]) -> dict[str, Any]:
    """The one error of a failed mutation; its data is null."""
    errors = body.get("errors", [])
    assert len(errors) == 1, body
    assert all(value is None for value in (body.get("data") or {}).values()), body
    found: dict[str, Any] = errors[0]
    return found


def gid(entity: Employee | Department | JobPosting | Application) -> str:
    if isinstance(entity, Employee):
        return ids.encode("Employee", entity.emp_id)
    if isinstance(entity, Department):
        return ids.encode("Department", entity.dept_id)
    if isinstance(entity, JobPosting):
        return ids.encode("JobPosting", entity.job_id)
    return ids.encode("Application", entity.job_id, entity.app_id)


def raw_id(global_id: str) -> tuple[str, ...]:
    return ids.decode(global_id).parts


# --- setup straight through the datastore (what is under test goes through the API) -------


def open_job(tenant: Tenant, department: Department, title: str = "Engineer") -> JobPosting:
    draft = run(jobs.create_job(tenant.table, department_id=department.dept_id, title=title))
    return run(jobs.publish_job(tenant.table, draft.job_id))


def manager_of(tenant: Tenant, department: Department) -> Employee:
    manager = tenant.employee(department, role=Role.MANAGER)
    run(departments.update_department(tenant.table, department.dept_id, manager_id=manager.emp_id))
    return manager


def audit_actions(tenant: Tenant) -> list[str]:
    """The tenant's audit trail, newest first, read straight from the datastore."""
    page = run(audit.list_audit_events(tenant.table, PageRequest(first=100)))
    return [event.action for event in page.items]

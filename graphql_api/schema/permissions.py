"""Who may see what inside their organisation: the field-level rules.

Tenant isolation is not decided here (the datastore scope does that); these rules split one
tenant's data between its roles. Resolvers call them directly, so no per-field hook runs on
hot types: a check costs nothing unless the field is sensitive, and a manager check loads the
department through the request's batched loader.

    field                          employee     manager                        admin
    Employee.applications          own          own                            all
    JobPosting.applications        -            jobs of departments managed    all
    JobPosting.applicationCounts   -            jobs of departments managed    all
    application(id) / node         own          own + jobs of depts managed    all
    Organization.jobPostings       OPEN only    all                            all
    jobPosting(id) / node          OPEN only    all                            all
    BillingSubscription.billingCustomerId -     -                              yes
    Organization.emailDomains      -            -                              yes (and operators)
    Organization.apiKeys           -            -                              yes
    createApiKey / revokeApiKey    -            -                              yes
    Organization.identityProvider  -            -                              yes
    set/removeIdentityProvider     -            -                              yes (and operators, naming it)
    signOut / signOutEverywhere    own          own                            own; everywhere: any employee
    Organization.auditLog          -            -                              yes
    erasePerson, GET /export       -            -                              yes
    setAuditRetention              -            -                              yes
    closeOrganization              -            -                              - (operators only)

Subscriptions (graphql_api/schema/subscription.py) authorise each event when they deliver it
with these same functions: a subscriber gets what they could read by query at that moment.

API keys act with the role they were given, EMPLOYEE or ADMIN, by the rows above; a key is
not a person, so ``me`` is null for it and it cannot apply to a job (``person``), and an
EMPLOYEE key runs no mutation at all (graphql_api/auth/read_only_keys.py).

A refusal is FORBIDDEN on that field alone (null plus an error), never a failed request.
"""

from __future__ import annotations

from datastore.kinds.entities import JobStatus, Role
from datastore.values.ids import EmployeeId
from graphql_api.execution.errors import forbidden, token_missing
from graphql_api.request.context import RequestContext
from graphql_api.request.principal import Principal


def caller(context: RequestContext) -> Principal:
    principal = context.principal
    if principal is None:
        raise token_missing()
    if principal.org_id is None:
        raise forbidden("platform operators see no tenant data")
    return principal


def person(context: RequestContext) -> EmployeeId:
    """The employee the caller is, acting for themselves (not an API key)."""
    emp_id = caller(context).employee_id
    if emp_id is None:
        raise forbidden("an API key is not an employee and cannot act as one")
    return emp_id


def is_admin(context: RequestContext) -> bool:
    return caller(context).role is Role.ADMIN


async def manages(context: RequestContext, dept_id: str | None) -> bool:
    """True when the caller is a manager and the manager of ``dept_id``."""
    principal = caller(context)
    if principal.role is not Role.MANAGER or dept_id is None:
        return False
    department = await context.loaders.department.get(dept_id)
    return department is not None and department.manager_id == principal.subject


def check_employee_applications(context: RequestContext, emp_id: str) -> None:
    caller(context)  # no token, or a platform operator: that error rather than this one
    if not may_read_employee_applications(context, emp_id):
        raise forbidden("only the employee and admins see an employee's applications")


def may_read_employee_applications(context: RequestContext, emp_id: str) -> bool:
    """Whether ``check_employee_applications`` passes, without raising: for a read started
    ahead of its field (fields.prefetch)."""
    principal = context.principal
    return (
        principal is not None
        and principal.org_id is not None
        and (principal.role is Role.ADMIN or principal.subject == emp_id)
    )


async def check_job_applications(context: RequestContext, dept_id: str) -> None:
    """A job's applications, and their counts: whoever reads one may read the other."""
    if not is_admin(context) and not await manages(context, dept_id):
        raise forbidden("only admins and the department's manager see a job's applications")


async def check_application(context: RequestContext, emp_id: str, job_id: str) -> None:
    principal = caller(context)
    if principal.role is Role.ADMIN or principal.subject == emp_id:
        return
    if principal.role is Role.MANAGER:
        job = await context.loaders.job.get(job_id)
        if job is not None and await manages(context, job.department_id):
            return
    raise forbidden("only the applicant, the department's manager and admins see an application")


def check_job(context: RequestContext, status: JobStatus) -> None:
    if status is not JobStatus.OPEN and caller(context).role is Role.EMPLOYEE:
        raise forbidden("employees see open job postings only")


def check_all_jobs(context: RequestContext) -> None:
    if caller(context).role is Role.EMPLOYEE:
        raise forbidden("employees list open job postings only (status: OPEN)")


def check_audit_trail(context: RequestContext) -> None:
    if not is_admin(context):
        raise forbidden("only admins read the audit log")


def check_billing(context: RequestContext) -> None:
    if not is_admin(context):
        raise forbidden("only admins see billing details")


def check_api_keys(context: RequestContext) -> None:
    if not is_admin(context):
        raise forbidden("only admins manage API keys")


def check_webhooks(context: RequestContext) -> None:
    if not is_admin(context):
        raise forbidden("only admins manage webhooks")


def check_identity_provider(context: RequestContext) -> None:
    if not is_admin(context):
        raise forbidden("only admins see the organisation's identity provider")


def check_email_domains(context: RequestContext) -> None:
    principal = context.principal
    if principal is not None and principal.is_platform:
        return  # operators set the domains, on organisations they list or create
    if not is_admin(context):
        raise forbidden("only admins see the organisation's email domains")

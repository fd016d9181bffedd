"""Demo data: Acme Corp and Globex Inc, loaded once into an empty table."""

from __future__ import annotations

from datetime import UTC, datetime

from datastore.kinds.entities import ApplicationStatus, Plan, Role
from datastore.signin import identities
from datastore.table.scoped import Table
from datastore.tenancy.scope import PlatformScope, SignInScope, TenantScope
from datastore.tenants import applications, departments, employees, jobs, organizations
from datastore.values.ids import DepartmentId, EmployeeId, JobId

ACME_ADMIN = "alice@acme.co"
ACME_MANAGER = "bob@acme.co"
GLOBEX_ADMIN = "hank@globex.example"
ACME_DOMAIN = "acme.co"
GLOBEX_DOMAIN = "globex.example"

# (email, first, last, department, role, hired)
ACME_PEOPLE = [
    ("bob@acme.co", "Bob", "Builder", "Engineering", Role.MANAGER, "2021-03-01"),
    ("carol@acme.co", "Carol", "Chen", "Sales", Role.MANAGER, "2021-06-14"),
    ("dave@acme.co", "Dave", "Diaz", "Engineering", Role.EMPLOYEE, "2022-01-10"),
    ("erin@acme.co", "Erin", "Evans", "Engineering", Role.EMPLOYEE, "2022-09-05"),
    ("frank@acme.co", "Frank", "Fischer", "Sales", Role.EMPLOYEE, "2023-02-20"),
    ("grace@acme.co", "Grace", "Gupta", "People Ops", Role.EMPLOYEE, "2023-05-02"),
    ("heidi@acme.co", "Heidi", "Hansen", "Finance", Role.EMPLOYEE, "2024-01-08"),
    ("ivan@acme.co", "Ivan", "Ivanov", "Engineering", Role.EMPLOYEE, "2024-07-15"),
    ("judy@acme.co", "Judy", "Jones", "Finance", Role.MANAGER, "2025-02-03"),
]

GLOBEX_PEOPLE = [
    ("ian@globex.example", "Ian", "Irwin", "Research", Role.MANAGER, "2022-04-04"),
    ("kate@globex.example", "Kate", "Kowalski", "Research", Role.EMPLOYEE, "2024-10-21"),
]


def _date(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


async def is_loaded(table: Table) -> bool:
    return await identities.find_identity(table.with_scope(SignInScope()), ACME_ADMIN) is not None


async def load(table: Table) -> bool:
    """Load the demo organisations unless they are there already; True when loaded now.

    They are written in this release's layout; demo data kept from an earlier release is
    brought to it by ``server.py migrate`` like any other (README "Upgrading").
    """
    if await is_loaded(table):
        return False
    await _load_acme(table)
    await _load_globex(table)
    return True


async def _organization(
    table: Table, name: str, plan: Plan, domain: str, admin: tuple[str, str, str]
) -> tuple[Table, EmployeeId]:
    org, admin_employee = await organizations.create_organization(
        table.with_scope(PlatformScope()),
        name=name,
        plan=plan,
        email_domains=[domain],
        admin_email=admin[0],
        admin_first_name=admin[1],
        admin_last_name=admin[2],
    )
    return table.with_scope(TenantScope(org.org_id, admin_employee.emp_id)), admin_employee.emp_id


async def _people(
    tenant: Table, people: list[tuple[str, str, str, str, Role, str]], dept_ids: dict[str, DepartmentId]
) -> dict[str, EmployeeId]:
    ids: dict[str, EmployeeId] = {}
    for email, first, last, dept, role, hired in people:
        employee = await employees.create_employee(
            tenant,
            email=email,
            first_name=first,
            last_name=last,
            department_id=dept_ids[dept],
            role=role,
            hired_at=_date(hired),
        )
        ids[email] = employee.emp_id
    return ids


async def _load_acme(table: Table) -> None:
    tenant, alice = await _organization(table, "Acme Corp", Plan.PRO, ACME_DOMAIN, (ACME_ADMIN, "Alice", "Anders"))
    dept_ids = {
        name: (await departments.create_department(tenant, name=name)).dept_id
        for name in ("Engineering", "Sales", "People Ops", "Finance")
    }
    await employees.move_employee(tenant, alice, dept_ids["People Ops"])
    people = await _people(tenant, ACME_PEOPLE, dept_ids)
    for dept, manager in (
        ("Engineering", "bob@acme.co"),
        ("Sales", "carol@acme.co"),
        ("Finance", "judy@acme.co"),
    ):
        await departments.update_department(tenant, dept_ids[dept], manager_id=people[manager])
    await departments.update_department(tenant, dept_ids["People Ops"], manager_id=alice)

    async def job(dept: str, title: str, description: str) -> JobId:
        return (
            await jobs.create_job(tenant, department_id=dept_ids[dept], title=title, description=description)
        ).job_id

    senior = await job("Engineering", "Senior Engineer", "Own the core API and its data model.")
    platform = await job("Engineering", "Platform Engineer", "Run the DynamoDB estate and CI.")
    account = await job("Sales", "Account Executive", "Grow our mid-market accounts.")
    coordinator = await job("People Ops", "HR Coordinator", "Run onboarding for new hires.")
    await job("Finance", "Finance Analyst", "Model headcount and hiring plans.")  # stays a draft
    for job_id in (coordinator, senior, platform, account):
        await jobs.publish_job(tenant, job_id)

    async def apply(job_id: JobId, email: str, *moves: ApplicationStatus) -> None:
        application = await applications.apply_to_job(tenant, job_id, people[email])
        for status in moves:
            if status is ApplicationStatus.WITHDRAWN:
                await applications.withdraw_application(tenant, job_id, application.app_id)
            else:
                await applications.set_application_status(tenant, job_id, application.app_id, status)

    await apply(coordinator, "grace@acme.co", ApplicationStatus.REVIEWING, ApplicationStatus.REJECTED)
    await apply(coordinator, "frank@acme.co")
    await jobs.close_job(tenant, coordinator)
    await apply(senior, "dave@acme.co", ApplicationStatus.REVIEWING)
    await apply(senior, "ivan@acme.co")
    await apply(platform, "erin@acme.co")
    await apply(platform, "dave@acme.co", ApplicationStatus.WITHDRAWN)
    await apply(account, "frank@acme.co", ApplicationStatus.REVIEWING, ApplicationStatus.ACCEPTED)
    await apply(account, "heidi@acme.co")


async def _load_globex(table: Table) -> None:
    tenant, hank = await _organization(
        table, "Globex Inc", Plan.ENTERPRISE, GLOBEX_DOMAIN, (GLOBEX_ADMIN, "Hank", "Scorpio")
    )
    research = (await departments.create_department(tenant, name="Research")).dept_id
    await departments.create_department(tenant, name="Operations")
    await employees.move_employee(tenant, hank, research)
    people = await _people(tenant, GLOBEX_PEOPLE, {"Research": research})
    await departments.update_department(tenant, research, manager_id=people["ian@globex.example"])
    technician = (
        await jobs.create_job(
            tenant, department_id=research, title="Lab Technician", description="Keep the lab running."
        )
    ).job_id
    await jobs.publish_job(tenant, technician)
    await applications.apply_to_job(tenant, technician, people["kate@globex.example"])

"""One organisation with every kind of object, for the role and isolation suites.

D1 (managed by M): employees E, M; jobs J1 (open), J3 (draft); applications E->J1, F->J1
D2 (no manager):   employee F;     job J2 (open);              application F->J2
"""

from __future__ import annotations

from dataclasses import dataclass

from datastore.kinds.entities import Application, Department, Employee, JobPosting, Role
from datastore.tenants import applications, departments, jobs
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant


@dataclass(frozen=True)
class World:
    tenant: Tenant
    d1: Department
    d2: Department
    manager: Employee
    employee: Employee
    other: Employee
    j1: JobPosting
    j2: JobPosting
    j3: JobPosting
    a_e_j1: Application
    a_f_j1: Application
    a_f_j2: Application

    @property
    def admin(self) -> Employee:
        return self.tenant.admin

    def global_ids(self) -> dict[str, str]:
        """A global id of every type, by a readable name."""
        org = self.tenant.org_id
        return {
            "Organization": ids.encode("Organization", org),
            "Subscription": ids.encode("Subscription", org),
            "Department": ids.encode("Department", self.d1.dept_id),
            "Employee": ids.encode("Employee", self.employee.emp_id),
            "JobPosting": ids.encode("JobPosting", self.j1.job_id),
            "Application": ids.encode("Application", self.a_e_j1.job_id, self.a_e_j1.app_id),
        }


def build_world(tenant: Tenant) -> World:
    table = tenant.table
    d1 = tenant.department("Engineering")
    d2 = tenant.department("Sales")
    manager = tenant.employee(d1, role=Role.MANAGER)
    d1 = run(departments.update_department(table, d1.dept_id, manager_id=manager.emp_id))
    employee = tenant.employee(d1)
    other = tenant.employee(d2)
    j1 = run(jobs.create_job(table, department_id=d1.dept_id, title="Engineer"))
    j1 = run(jobs.publish_job(table, j1.job_id))
    j2 = run(jobs.create_job(table, department_id=d2.dept_id, title="Account Executive"))
    j2 = run(jobs.publish_job(table, j2.job_id))
    j3 = run(jobs.create_job(table, department_id=d1.dept_id, title="Draft Role"))
    a_e_j1 = run(applications.apply_to_job(table, j1.job_id, employee.emp_id))
    a_f_j1 = run(applications.apply_to_job(table, j1.job_id, other.emp_id))
    a_f_j2 = run(applications.apply_to_job(table, j2.job_id, other.emp_id))
    return World(tenant, d1, d2, manager, employee, other, j1, j2, j3, a_e_j1, a_f_j1, a_f_j2)

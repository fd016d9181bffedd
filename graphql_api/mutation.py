"""The root Mutation type: each field takes one input object and returns one payload."""

from __future__ import annotations

import strawberry

from graphql_api.mutations import applications, departments, employees, jobs, organizations


@strawberry.type
class Mutation:
    create_department = strawberry.mutation(resolver=departments.create_department)
    update_department = strawberry.mutation(resolver=departments.update_department)
    create_employee = strawberry.mutation(resolver=employees.create_employee)
    update_employee = strawberry.mutation(resolver=employees.update_employee)
    move_employee = strawberry.mutation(resolver=employees.move_employee)
    terminate_employee = strawberry.mutation(resolver=employees.terminate_employee)
    create_job_posting = strawberry.mutation(resolver=jobs.create_job_posting)
    update_job_posting = strawberry.mutation(resolver=jobs.update_job_posting)
    publish_job_posting = strawberry.mutation(resolver=jobs.publish_job_posting)
    close_job_posting = strawberry.mutation(resolver=jobs.close_job_posting)
    apply_to_job = strawberry.mutation(resolver=applications.apply_to_job)
    withdraw_application = strawberry.mutation(resolver=applications.withdraw_application)
    set_application_status = strawberry.mutation(resolver=applications.set_application_status)
    create_organization = strawberry.mutation(
        resolver=organizations.create_organization, description="Platform operators only."
    )
    add_email_domain = strawberry.mutation(
        resolver=organizations.add_email_domain,
        description="Platform operators only: give an organisation one more email domain.",
    )

"""The root Mutation type: each field takes one input object and returns one payload."""

from __future__ import annotations

from typing import Final

import strawberry

from graphql_api.schema.mutations import (
    api_keys,
    applications,
    departments,
    employees,
    erasure,
    imports,
    jobs,
    organizations,
    retention,
    sign_in,
    webhooks,
)

# Said once, appended to every mutation that writes tenant data.
_ERRORS: Final = (
    " Errors (`extensions.code`): UNAUTHENTICATED without a valid token; BAD_USER_INPUT for an invalid "
    "field (`extensions.field` names it, as `input.<field>`); NOT_FOUND for an id that names nothing "
    "in your organisation. A failed write changes nothing."
)
_ADMINS: Final = " Admins only (else FORBIDDEN)."
_VERSIONED: Final = " A stale `expectedVersion` is a CONFLICT."


@strawberry.type(
    description="What a client writes. Each mutation takes one `input` object and returns a payload with the "
    "written objects (null with an error when it fails); most take an `idempotencyKey` for safe retries."
)
class Mutation:
    create_department = strawberry.mutation(
        resolver=departments.create_department,
        description="Creates a department, optionally with a manager (an ACTIVE employee)." + _ADMINS + _ERRORS,
    )
    update_department = strawberry.mutation(
        resolver=departments.update_department,
        description="Renames a department, or sets or removes its manager; name at least one change."
        + _ADMINS
        + _ERRORS,
    )
    create_employee = strawberry.mutation(
        resolver=employees.create_employee,
        description="Adds an ACTIVE employee, optionally in a department (whose headcount grows by one). "
        "An email already in use anywhere on the platform is a CONFLICT." + _ADMINS + _ERRORS,
    )
    import_employees = strawberry.mutation(
        resolver=imports.import_employees,
        description="Bulk onboarding: up to 100 new employees, each row its own createEmployee transaction "
        "(unique email, your own domain, headcount), with one result per row: CREATED, UNCHANGED (an ACTIVE "
        "employee with this email and the same data exists, so re-running an import duplicates nothing) or "
        "FAILED with a code and `input.rows.<index>.<field>`. A failed row writes nothing and does not stop "
        "the others. More than 100 rows is BAD_USER_INPUT (`input.rows`) and nothing is written."
        + _ADMINS
        + " Errors (`extensions.code`): UNAUTHENTICATED without a valid token.",
    )
    update_employee = strawberry.mutation(
        resolver=employees.update_employee,
        description="Changes an employee's email, name or role; fields left out keep their values."
        + _ADMINS
        + _VERSIONED
        + " An email already in use is a CONFLICT."
        + _ERRORS,
    )
    move_employee = strawberry.mutation(
        resolver=employees.move_employee,
        description="Moves an ACTIVE employee to another department, updating both headcounts in the same "
        "write. Moving an INACTIVE employee is a CONFLICT." + _ADMINS + _VERSIONED + _ERRORS,
    )
    terminate_employee = strawberry.mutation(
        resolver=employees.terminate_employee,
        description="Ends an employment: the employee becomes INACTIVE, gets `terminatedAt`, leaves their "
        "department's headcount and can no longer sign in. Terminating an INACTIVE employee is a CONFLICT."
        + _ADMINS
        + _VERSIONED
        + _ERRORS,
    )
    erase_person = strawberry.mutation(
        resolver=erasure.erase_person,
        description="Erases a terminated employee's personal data everywhere it is stored (GDPR art. 17): the "
        "employee becomes a tombstone with an empty email and names (`erasedAt` set), their name-search entries, "
        "email pointer and sign-in identity are deleted (the email is free again), audit events about them keep "
        "what happened but lose the personal values in their changes, and idempotency records of writes about "
        "them are dropped; applications keep their status, their applicant shown as the erased person. Every "
        "headcount and application count is kept, and the erasure is itself an audit event with no personal "
        "value. Erasing an erased person changes nothing (`alreadyErased`); an ACTIVE employee is a CONFLICT "
        "(terminate them first)." + _ADMINS + _ERRORS,
    )
    set_audit_retention = strawberry.mutation(
        resolver=retention.set_audit_retention,
        description="Sets how long the organisation's audit events are kept (`auditRetentionDays`): each event "
        "written from now on expires that many days after it happened and is then deleted by the table's TTL "
        "(within a few days); events written before keep the expiry they were written with. Null returns to the "
        "platform's default. Setting the current value changes nothing; a change is itself an audit event "
        "(organization.setAuditRetention), kept under the retention it replaces." + _ADMINS + _ERRORS,
    )
    create_job_posting = strawberry.mutation(
        resolver=jobs.create_job_posting,
        description="Drafts a job posting in a department; publish it with publishJobPosting." + _ADMINS + _ERRORS,
    )
    update_job_posting = strawberry.mutation(
        resolver=jobs.update_job_posting,
        description="Changes a posting's title, description or department; fields left out keep their "
        "values. A CLOSED posting cannot be edited (BAD_USER_INPUT)." + _ADMINS + _VERSIONED + _ERRORS,
    )
    publish_job_posting = strawberry.mutation(
        resolver=jobs.publish_job_posting,
        description="Opens a DRAFT posting: it becomes OPEN, gets `postedAt` and every employee can see it "
        "and apply. Any other status is BAD_USER_INPUT." + _ADMINS + _VERSIONED + _ERRORS,
    )
    close_job_posting = strawberry.mutation(
        resolver=jobs.close_job_posting,
        description="Closes a DRAFT or OPEN posting: it becomes CLOSED, gets `closedAt` and takes no more "
        "applications. An already CLOSED one is BAD_USER_INPUT." + _ADMINS + _VERSIONED + _ERRORS,
    )
    apply_to_job = strawberry.mutation(
        resolver=applications.apply_to_job,
        description="Applies to an OPEN job posting as the signed-in employee (any role); the application "
        "starts APPLIED. A second application to the same job, a job that is not OPEN, or an INACTIVE "
        "applicant is a CONFLICT." + _ERRORS,
    )
    withdraw_application = strawberry.mutation(
        resolver=applications.withdraw_application,
        description="Withdraws an APPLIED or REVIEWING application (it becomes WITHDRAWN). The applicant or "
        "an admin only (else FORBIDDEN); a decided application is BAD_USER_INPUT." + _ERRORS,
    )
    set_application_status = strawberry.mutation(
        resolver=applications.set_application_status,
        description="Records a review step: APPLIED to REVIEWING or REJECTED, REVIEWING to ACCEPTED or "
        "REJECTED; any other move is BAD_USER_INPUT. Admins and the manager of the job's department only "
        "(else FORBIDDEN)." + _ERRORS,
    )
    create_organization = strawberry.mutation(
        resolver=organizations.create_organization,
        description="Creates an organisation, its billing subscription (seats from the plan) and its first "
        "ADMIN employee, in one write. Platform operators' tokens only (else FORBIDDEN). An admin email "
        "already in use is a CONFLICT; an invalid field is BAD_USER_INPUT.",
    )
    add_email_domain = strawberry.mutation(
        resolver=organizations.add_email_domain,
        description="Platform operators only: give an organisation one more email domain.",
    )
    close_organization = strawberry.mutation(
        resolver=organizations.close_organization,
        description="Platform operators only (else FORBIDDEN): offboards an organisation. It becomes CLOSING at "
        "once, so every request of its members and API keys, and sign-in, is refused as UNAUTHENTICATED; its "
        "data is kept for the grace period (OFFBOARDING_GRACE_DAYS), then `server.py offboard` deletes every "
        "item of it, releases its email domains and identities, and keeps a deletion receipt outside its data. "
        "Closing a CLOSING organisation changes nothing; one being restored is a CONFLICT; an unknown id is "
        "NOT_FOUND.",
    )
    create_api_key = strawberry.mutation(
        resolver=api_keys.create_api_key,
        description="Creates an ACTIVE API key for an integration and returns its secret, this once (no "
        "idempotencyKey: a replay would have to show the secret again). An audit event records it." + _ADMINS + _ERRORS,
    )
    set_identity_provider = strawberry.mutation(
        resolver=sign_in.set_identity_provider,
        description="Registers the organisation's own OpenID provider, or changes it: from then on its people sign "
        "in through it (and no longer through the platform's provider), and it signs in nobody else. An audit event "
        "records it (identityProvider.register or .change). Admins of the organisation signed in as a person, or "
        "platform operators naming it (else FORBIDDEN; an API key is FORBIDDEN, whatever its role)." + _ERRORS,
    )
    remove_identity_provider = strawberry.mutation(
        resolver=sign_in.remove_identity_provider,
        description="Removes the organisation's own provider: its people sign in through the platform's provider "
        "again (if the server has one). Sessions begun through it end: their refresh tokens are refused from now on "
        "(access tokens already issued work until they expire). NOT_FOUND when it has none. An audit event "
        "records it (identityProvider.remove). Admins of the organisation, or platform operators naming it." + _ERRORS,
    )
    sign_out = strawberry.mutation(
        resolver=sign_in.sign_out,
        description="Ends one of your sessions, by default the one this access token was issued in: its refresh "
        "tokens stop working. A person's own act (an API key or a platform operator is FORBIDDEN).",
    )
    sign_out_everywhere = strawberry.mutation(
        resolver=sign_in.sign_out_everywhere,
        description="Ends every session of yours (or, for admins, of an employee named), on every device, with one "
        "write: their refresh tokens stop working. Errors (`extensions.code`): FORBIDDEN for an API key, a platform "
        "operator, or someone else's sessions without being an admin; NOT_FOUND for an employee id that names "
        "nobody in your organisation.",
    )
    create_webhook_endpoint = strawberry.mutation(
        resolver=webhooks.create_webhook_endpoint,
        description="Registers a webhook endpoint: the organisation's audit events of the types named are POSTed "
        "to it, signed (Standard Webhooks), retried on failure, in order per object. Returns its secret, this once. "
        "A URL that is not https (outside development) or whose host resolves to an address that is not public is "
        "BAD_USER_INPUT (`input.url`), as is a 21st endpoint. An audit event records it." + _ADMINS + _ERRORS,
    )
    update_webhook_endpoint = strawberry.mutation(
        resolver=webhooks.update_webhook_endpoint,
        description="Changes an endpoint's URL, event types or description, or disables or enables it. An audit "
        "event records it." + _ADMINS + _ERRORS,
    )
    delete_webhook_endpoint = strawberry.mutation(
        resolver=webhooks.delete_webhook_endpoint,
        description="Deletes an endpoint: nothing more is sent to it. An audit event records it." + _ADMINS + _ERRORS,
    )
    rotate_webhook_secret = strawberry.mutation(
        resolver=webhooks.rotate_webhook_secret,
        description="Gives an endpoint a new signing secret, returned this once; the previous one keeps signing "
        "beside it for 24 hours. An endpoint restored from an export needs this before anything is delivered to it. "
        "An audit event records it." + _ADMINS + _ERRORS,
    )
    redeliver_webhook = strawberry.mutation(
        resolver=webhooks.redeliver_webhook,
        description="Sends a DELIVERED or FAILED delivery again, now, with the same `webhook-id`; a PENDING one is "
        "a CONFLICT (it is on its way)." + _ADMINS + _ERRORS,
    )
    revoke_api_key = strawberry.mutation(
        resolver=api_keys.revoke_api_key,
        description="Revokes an API key: from the next request on, its secret is refused as UNAUTHENTICATED. "
        "Revoking a REVOKED key is a CONFLICT. An audit event records it." + _ADMINS + _ERRORS,
    )

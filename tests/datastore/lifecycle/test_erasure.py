"""Erasing a person: nothing personal left in a full export, every invariant kept, idempotent."""

from __future__ import annotations

import hashlib

import pytest
from mypy_boto3_dynamodb import DynamoDBClient

from datastore.aws import calls
from datastore.errors import Conflict, NotFound
from datastore.kinds import layout
from datastore.kinds.entities import EmployeeStatus, Role
from datastore.lifecycle import erasure
from datastore.table.pagination import PageRequest, every
from datastore.tenants import applications, employees, jobs, persisted_documents
from datastore.upkeep import counts
from datastore.values import items
from datastore.values.ids import EmployeeId, new_id
from datastore.writes import audit
from tests.blocking import run, run_all
from tests.conftest import TenantFactory
from tests.datastore.lifecycle.complete import DOCUMENT, Complete, complete
from tests.datastore.lifecycle.support import exported, fingerprint

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@pytest.fixture
def whole(make_tenant: TenantFactory) -> Complete:
    return complete(make_tenant())


def personal_values(whole: Complete) -> list[str]:
    leaver = whole.leaver
    return [leaver.email, leaver.first_name.lower(), leaver.last_name.lower()]


def test_erase__a_full_export_holds_none_of_the_persons_values(whole: Complete) -> None:
    text = b"".join(exported(whole.tenant.table, whole.tenant.org_id)).decode().lower()
    assert all(value in text for value in personal_values(whole))  # the search finds them before

    run(erasure.erase_person(whole.tenant.table, whole.leaver.emp_id))

    text = b"".join(exported(whole.tenant.table, whole.tenant.org_id)).decode().lower()
    assert [value for value in personal_values(whole) if value in text] == []


def test_erase__a_tombstone__references_intact__invariants_kept(whole: Complete) -> None:
    table, leaver = whole.tenant.table, whole.leaver
    job_before = run(jobs.get_job(table, whole.job.job_id, consistent=True))

    result = run(erasure.erase_person(table, leaver.emp_id))

    tombstone = run(employees.get_employee(table, leaver.emp_id, consistent=True))
    assert tombstone is not None and tombstone == result.employee
    assert (tombstone.email, tombstone.first_name, tombstone.last_name) == ("", "", "")
    assert tombstone.erased_at is not None and tombstone.version == leaver.version + 1
    assert (tombstone.status, tombstone.hired_at, tombstone.department_id) == (
        EmployeeStatus.INACTIVE, leaver.hired_at, leaver.department_id,
    )  # fmt: skip
    # The application keeps its status, its applicant the erased person; the job's counts hold.
    application = run(applications.get_application(table, whole.job.job_id, whole.application.app_id, consistent=True))
    assert application == whole.application
    assert run(jobs.get_job(table, whole.job.job_id, consistent=True)) == job_before
    assert run(counts.check_organization(table)).drifts == []
    assert run(employees.find_employee_id_by_email(table, leaver.email)) is None
    assert run(employees.list_employees_by_name(table, "leaverton", PageRequest())).items == []


def test_erase__the_email_is_free_for_a_new_person(whole: Complete) -> None:
    run(erasure.erase_person(whole.tenant.table, whole.leaver.emp_id))

    again = run(
        employees.create_employee(
            whole.tenant.table,
            email=whole.leaver.email,
            first_name="New",
            last_name="Hire",
            department_id=None,
            role=Role.EMPLOYEE,
        )
    )

    assert run(employees.find_employee_id_by_email(whole.tenant.table, whole.leaver.email)) == again.emp_id


def test_erase__audit_events_keep_what_happened__lose_the_values(whole: Complete) -> None:
    run(erasure.erase_person(whole.tenant.table, whole.leaver.emp_id))

    trail = list(run_all(every(lambda request: audit.list_audit_events(whole.tenant.table, request))))
    about = [event for event in trail if event.entity_id == whole.leaver.emp_id]
    create, terminate, erase = sorted(about, key=lambda event: event.event_id)
    assert create.action == "employee.create" and create.erased_at is not None
    fields = {change.field: (change.before, change.after) for change in create.changes}
    assert fields["email"] == fields["firstName"] == fields["lastName"] == (None, None)
    assert fields["role"] == (None, "employee")  # what is not personal stays
    assert terminate.action == "employee.terminate"
    assert {c.field: c.after for c in terminate.changes}["status"] == "inactive"
    assert erase.action == "employee.erase" and erase.actor_id == whole.tenant.admin.emp_id
    assert {c.field: (c.before, c.after) for c in erase.changes if c.field != "erasedAt"} == {
        "email": (None, ""), "firstName": (None, ""), "lastName": (None, ""),
    }  # fmt: skip
    assert erase.idempotency_key is None


def test_erase__idempotency_records_of_writes_about_them__dropped(whole: Complete) -> None:
    table = whole.tenant.table
    record = layout.IDEMPOTENCY.key_at(whole.tenant.org_id, "leave-1")
    kept = layout.IDEMPOTENCY.key_at(whole.tenant.org_id, "apply-1")  # an application: no personal value
    assert run(table.get(record)) is not None

    run(erasure.erase_person(table, whole.leaver.emp_id))

    assert run(table.get(record, consistent=True)) is None
    assert run(table.get(kept, consistent=True)) is not None


def test_erase__dry_run__lists_every_item__writes_nothing(whole: Complete) -> None:
    table = whole.tenant.table
    before = fingerprint(table, whole.tenant.org_id)
    with calls.listening() as log:
        plan = run(erasure.erase_person(table, whole.leaver.emp_id, dry_run=True))

    assert not WRITES & set(log.operations())
    assert fingerprint(table, whole.tenant.org_id) == before
    touched = plan.by_kind()
    assert touched[layout.EMPLOYEE.tag] == 1 and touched[layout.IDENTITY.tag] == 1
    assert touched[layout.EMAIL_POINTER.tag] == 1 and touched[layout.IDEMPOTENCY.tag] == 1
    assert touched[layout.AUDIT_EVENT.tag] == 1  # the create: the terminate changed nothing personal
    assert touched[layout.NAME_ENTRY.tag] == len(employees.name_entry_items(whole.leaver))
    assert all(line.startswith(("redact", "delete", "tombstone")) for line in (t.describe() for t in plan.touches))

    done = run(erasure.erase_person(table, whole.leaver.emp_id))

    assert done.touches == plan.touches


def test_erase__again__nothing_to_do(whole: Complete) -> None:
    run(erasure.erase_person(whole.tenant.table, whole.leaver.emp_id))
    with calls.listening() as log:
        again = run(erasure.erase_person(whole.tenant.table, whole.leaver.emp_id))

    assert again.already and again.touches == []
    assert not WRITES & set(log.operations())


def test_erase__interrupted_before_the_last_write__finished_by_a_run_again(
    whole: Complete, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*_args: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(erasure, "_tombstone", crash)
        with pytest.raises(KeyboardInterrupt):
            run(erasure.erase_person(whole.tenant.table, whole.leaver.emp_id))
    assert run(employees.get_employee(whole.tenant.table, whole.leaver.emp_id, consistent=True)) == whole.leaver

    run(erasure.erase_person(whole.tenant.table, whole.leaver.emp_id))

    text = b"".join(exported(whole.tenant.table, whole.tenant.org_id)).decode().lower()
    assert [value for value in personal_values(whole) if value in text] == []


def test_erase__a_membership_left_by_drift__deleted_with_its_headcount(whole: Complete, client: DynamoDBClient) -> None:
    table = whole.tenant.table
    leaver = whole.leaver
    client.put_item(TableName=table.name, Item=layout.MEMBERSHIP.item(leaver))
    client.update_item(
        TableName=table.name,
        Key=layout.DEPARTMENT.key_at(whole.tenant.org_id, whole.department.dept_id).wire(),
        UpdateExpression="ADD headcount :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )

    run(erasure.erase_person(table, leaver.emp_id))

    assert run(table.get(layout.MEMBERSHIP.key_of(leaver), consistent=True)) is None
    assert run(counts.check_organization(table)).drifts == []


def test_erase__an_active_employee__conflict(whole: Complete) -> None:
    with pytest.raises(Conflict, match="terminate them first"):
        run(erasure.erase_person(whole.tenant.table, whole.employee.emp_id))


def test_erase__no_such_employee__not_found(whole: Complete) -> None:
    with pytest.raises(NotFound):
        run(erasure.erase_person(whole.tenant.table, EmployeeId(new_id())))


def test_erased__cannot_be_given_personal_data_again(whole: Complete) -> None:
    erased = run(erasure.erase_person(whole.tenant.table, whole.leaver.emp_id)).employee

    with pytest.raises(Conflict, match="erased"):
        run(
            employees.update_employee(
                whole.tenant.table, erased.emp_id, expected_version=erased.version, first_name="Lou"
            )
        )


def test_erase__persisted_documents_holding_the_email_or_a_name__deleted_others_kept(whole: Complete) -> None:
    """An admin saved queries naming the person: their text is the person's values too."""
    table, org_id, leaver = whole.tenant.table, whole.tenant.organization.org_id, whole.leaver
    texts = {
        "email": f'query {{ employeeByEmail(email: "{leaver.email.upper()}") {{ id }} }}',
        "name": 'query { employees(filter: {search: "leaverton"}) { edges { node { id } } } }',
        "other": 'query { employees(filter: {search: "Leavertonia"}) { edges { node { id } } } }',
    }
    digests = {label: hashlib.sha256(text.encode()).hexdigest() for label, text in texts.items()}
    for label, text in texts.items():
        run(persisted_documents.put_document(table, org_id, digests[label], text, items.now()))

    planned = run(erasure.erase_person(table, leaver.emp_id, dry_run=True))
    done = run(erasure.erase_person(table, leaver.emp_id))

    removed = {layout.PERSISTED_DOCUMENT.key_at(org_id, digests[label]) for label in ("email", "name")}
    assert {t.key for t in planned.touches if t.kind == layout.PERSISTED_DOCUMENT.tag} == removed
    assert done.by_kind()[layout.PERSISTED_DOCUMENT.tag] == 2
    assert run(persisted_documents.get_document(table, org_id, digests["email"])) is None
    assert run(persisted_documents.get_document(table, org_id, digests["name"])) is None
    # Neither their email nor a name as a word: kept, as is the document complete() registered.
    assert run(persisted_documents.get_document(table, org_id, digests["other"])) == texts["other"]
    assert (
        run(persisted_documents.get_document(table, org_id, hashlib.sha256(DOCUMENT.encode()).hexdigest())) == DOCUMENT
    )

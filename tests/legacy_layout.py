"""Data in layout 0, written the way the previous release (d3877fb) wrote it, through boto3
(and, at the end, layout 1's audit events, from that layout's captured fixture).

Every item is spelt out here as that release's ``datastore/values/items.py`` built it, with literal
attribute names and values rather than today's writers, so the tests of the migration start
from what an earlier release really left in a table: organisations without email domains,
employees without name entries, jobs with applications but no counters, and no layout
version item. A table is created as that release's ``ensure_table`` created it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from datastore.aws.control_plane import make_client
from datastore.config import DatastoreSettings
from datastore.dev import local
from datastore.kinds import layout
from datastore.upkeep.provision import ensure_time_to_live, table_definition
from datastore.values import ids
from tests.datastore import wire
from tests.datastore.support import write_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
START = datetime(2024, 1, 8, 9, 0, tzinfo=UTC)


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _ts(value: datetime) -> dict[str, str]:
    return _s(value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"))


def create_legacy_table(client: DynamoDBClient, name: str) -> None:
    """The table as the previous release's ensure_table made it: no layout version item, no stream."""
    definition = {name: value for name, value in table_definition(name).items() if name != "StreamSpecification"}
    client.create_table(**definition)  # type: ignore[arg-type]
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    ensure_time_to_live(client, name)


@dataclass
class LegacyEmployee:
    emp_id: str
    email: str
    first_name: str
    last_name: str
    department_id: str | None
    role: str = "employee"


@dataclass
class LegacyOrganization:
    """One organisation of the previous release, built up and then written with ``write``."""

    name: str
    org_id: str = field(default_factory=ids.new_id)
    items: list[Item] = field(default_factory=list)
    employees: list[LegacyEmployee] = field(default_factory=list)
    # applications per job id, by status
    applications: dict[str, dict[str, int]] = field(default_factory=dict)
    _departments: dict[str, Item] = field(default_factory=dict)

    def __post_init__(self) -> None:
        org = self.org_id
        self.items += [
            {
                "PK": _s(f"ORG#{org}"),
                "SK": _s("#METADATA"),
                "GSI1PK": _s("ORGS"),
                "GSI1SK": _s(f"{self.name}#{org}"),
                "entity": _s("Organization"),
                "orgId": _s(org),
                "name": _s(self.name),
                "plan": _s("pro"),
                "status": _s("active"),
                "createdAt": _ts(START),
            },
            {
                "PK": _s(f"ORG#{org}"),
                "SK": _s("#SUBSCRIPTION"),
                "entity": _s("Subscription"),
                "orgId": _s(org),
                "plan": _s("pro"),
                "seats": _n(250),
                "renewsAt": _ts(START + timedelta(days=30)),
            },
        ]

    def department(self, name: str) -> str:
        dept_id = ids.new_id()
        item = {
            "PK": _s(f"ORG#{self.org_id}"),
            "SK": _s(f"DEPT#{dept_id}"),
            "entity": _s("Department"),
            "orgId": _s(self.org_id),
            "deptId": _s(dept_id),
            "name": _s(name),
            "headcount": _n(0),
        }
        self._departments[dept_id] = item
        self.items.append(item)
        return dept_id

    def employee(
        self, email: str, first_name: str, last_name: str, department_id: str | None = None, *, role: str = "employee"
    ) -> LegacyEmployee:
        """The employee, its identity and email pointer, and its membership copy; no name entries."""
        org, emp_id = self.org_id, ids.new_id()
        hired = START + timedelta(days=len(self.employees))
        attributes: Item = {
            "orgId": _s(org),
            "empId": _s(emp_id),
            "email": _s(email),
            "firstName": _s(first_name),
            "lastName": _s(last_name),
            "role": _s(role),
            "status": _s("active"),
            "hiredAt": _ts(hired),
            "version": _n(1),
        }
        if department_id is not None:
            attributes["departmentId"] = _s(department_id)
        hired_at = _ts(hired)["S"]
        self.items += [
            {
                "PK": _s(f"ORG#{org}"),
                "SK": _s(f"EMP#{emp_id}"),
                "GSI1PK": _s(f"ORG#{org}#EMP"),
                "GSI1SK": _s(f"{hired_at}#{emp_id}"),
                "entity": _s("Employee"),
                **attributes,
            },
            {
                "PK": _s(f"EMAIL#{email}"),
                "SK": _s("#IDENTITY"),
                "entity": _s("Identity"),
                "email": _s(email),
                "orgId": _s(org),
                "empId": _s(emp_id),
            },
            {
                "PK": _s(f"ORG#{org}"),
                "SK": _s(f"EMAIL#{email}"),
                "entity": _s("EmailPointer"),
                "orgId": _s(org),
                "empId": _s(emp_id),
            },
        ]
        if department_id is not None:
            self.items.append(
                {
                    "PK": _s(f"ORG#{org}#DEPT#{department_id}"),
                    "SK": _s(f"EMP#{emp_id}"),
                    "entity": _s("Membership"),
                    **attributes,
                }
            )
            headcount = self._departments[department_id]["headcount"]
            headcount["N"] = str(int(headcount["N"]) + 1)
        employee = LegacyEmployee(emp_id, email, first_name, last_name, department_id, role)
        self.employees.append(employee)
        return employee

    def job(self, department_id: str, title: str, *, status: str = "open") -> str:
        """A job posting without application counters (the previous release had none)."""
        org, job_id = self.org_id, ids.new_id()
        posted = START + timedelta(days=40, hours=len(self.applications))
        item: Item = {
            "PK": _s(f"ORG#{org}"),
            "SK": _s(f"JOB#{job_id}"),
            "entity": _s("JobPosting"),
            "orgId": _s(org),
            "jobId": _s(job_id),
            "departmentId": _s(department_id),
            "title": _s(title),
            "description": _s(f"{title}: the job."),
            "status": _s(status),
            "version": _n(2 if status == "open" else 3 if status == "closed" else 1),
        }
        if status != "draft":
            item["postedAt"] = _ts(posted)
        if status == "open":
            item["GSI1PK"] = _s(f"ORG#{org}#OPEN")
            item["GSI1SK"] = _s(f"JOB#{_ts(posted)['S']}#{job_id}")
        if status == "closed":
            item["closedAt"] = _ts(posted + timedelta(days=5))
        self.items.append(item)
        self.applications[job_id] = {}
        return job_id

    def apply(self, job_id: str, employee: LegacyEmployee, status: str = "applied") -> str:
        """An application and its applicant marker; the job's item is left as it was."""
        org, app_id = self.org_id, ids.new_id()
        self.items += [
            {
                "PK": _s(f"ORG#{org}#JOB#{job_id}"),
                "SK": _s(f"APP#{app_id}"),
                "GSI1PK": _s(f"ORG#{org}#EMP#{employee.emp_id}"),
                "GSI1SK": _s(f"APP#{app_id}"),
                "entity": _s("Application"),
                "orgId": _s(org),
                "appId": _s(app_id),
                "jobId": _s(job_id),
                "empId": _s(employee.emp_id),
                "status": _s(status),
                "submittedAt": _ts(START + timedelta(days=45)),
            },
            {
                "PK": _s(f"ORG#{org}#JOB#{job_id}"),
                "SK": _s(f"APPLICANT#{employee.emp_id}"),
                "entity": _s("Applicant"),
                "appId": _s(app_id),
            },
        ]
        by_status = self.applications[job_id]
        by_status[status] = by_status.get(status, 0) + 1
        return app_id

    def write(self, client: DynamoDBClient, table_name: str) -> LegacyOrganization:
        write_items(client, table_name, self.items)
        return self


def typical_organization(name: str, domain: str, *, people: int = 6) -> LegacyOrganization:
    """An organisation as the previous release left it after some use: an admin, two
    departments, ``people`` employees in ``domain``, an open job with applications in
    several statuses, a closed one with one, and a draft."""
    org = LegacyOrganization(name)
    engineering, sales = org.department("Engineering"), org.department("Sales")
    org.employee(f"admin@{domain}", "Ada", "Admin", role="admin")
    staff = [
        org.employee(f"p{index}@{domain}", first, last, (engineering, sales)[index % 2])
        for index, (first, last) in enumerate(
            [("Zoë", "Zimmer"), ("Ana", "Lima"), ("Bo", "Ng"), ("Cai", "Ng Li"), ("Dee", "Olsen"), ("Eli", "Park")][
                :people
            ]
        )
    ]
    open_job = org.job(engineering, "Engineer")
    for person, status in zip(staff, ["applied", "reviewing", "rejected", "withdrawn", "applied"], strict=False):
        org.apply(open_job, person, status)
    closed = org.job(sales, "Seller", status="closed")
    org.apply(closed, staff[0], "accepted")
    org.job(sales, "Draft", status="draft")
    return org


# --- the previous release's engine ------------------------------------------------------------


@contextmanager
def unlocked_engine(cache_dir: Path, data_dir: Path, *, cwd: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """DynamoDB Local on ``data_dir`` started as the previous release started it: the same
    command, and no data-directory lock. ``cwd`` given, ``-dbPath`` is relative to it. The
    engine is answering (its database file open) when this yields; it is killed after."""
    java = shutil.which("java")
    assert java is not None
    jar = local.ensure_installed(cache_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    port = local.free_port()
    db_path = str(data_dir) if cwd is None else os.path.relpath(data_dir, cwd)
    command = [java, f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}", "-jar", str(jar)]
    command += ["-port", str(port), "-sharedDb", "-disableTelemetry", "-dbPath", db_path]
    process = subprocess.Popen(command, cwd=cwd or jar.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        client = make_client(replace(DatastoreSettings.from_env({}), embedded=False), f"http://127.0.0.1:{port}")
        while True:
            try:
                client.list_tables()  # the first request opens the database file
                client.close()
                break
            except (BotoCoreError, ClientError):
                assert process.poll() is None and time.monotonic() < deadline, "the engine did not start"
                time.sleep(0.2)
        yield process
    finally:
        process.kill()
        process.wait()


def layout_1_organization(org_id: str, name: str, *, retention_days: int | None = None) -> list[Item]:
    """An organisation and two audit events exactly as layout 1 wrote them (tests/datastore/layout_1.json,
    captured from that release's writers), under ``org_id``: events without ``expiresAt``."""
    fixture = json.loads(wire.FIXTURE.read_text())["items"]
    text = json.dumps([fixture["organization"], fixture["audit_event"], fixture["audit_event_bare"]])
    org, event, bare = json.loads(text.replace(wire.ORG, org_id).replace("Acme#", f"{name}#"))
    org["name"] = {"S": name}
    if retention_days is not None:
        org[layout.AUDIT_RETENTION_DAYS] = {"N": str(retention_days)}
    # The bare event under an id of its own (the fixture's two share one key).
    bare["SK"] = {"S": "EVT#01HZ000000000000000000000A"}
    bare["eventId"] = {"S": "01HZ000000000000000000000A"}
    assert layout.EXPIRES_AT not in event and layout.EXPIRES_AT not in bare
    return [org, event, bare]

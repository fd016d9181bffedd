"""`python -m bench.migrate [ORGANISATIONS] [PEOPLE]`: how long `server.py migrate` takes per 1,000 items.

On a fresh in-memory DynamoDB Local: ORGANISATIONS (default 10) organisations in layout 0,
written as the release before layout versions wrote them (tests/legacy_layout.py), each with
PEOPLE (default 200) employees in four departments, a job with an application from every
fourth of them, and an admin. Then ``server.py migrate --quiet`` runs as an operator runs it
(its own process, on that endpoint and table), through every step to the current layout:
email domains, name entries, counters, then audit expiries. Printed: the items in the table
before, the command's seconds (the process's start included), seconds per 1,000 items, its
summary lines, and the host's load average, since the figure moves with it.

Figures are printed; nothing is asserted here (tests/test_server_migrate.py tests the command).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from datastore.aws.control_plane import make_client
from datastore.config import DatastoreSettings
from datastore.dev.local import DynamoDBLocal
from graphql_api.settings import Settings, child_environment
from tests.legacy_layout import LegacyOrganization, create_legacy_table

ROOT = Path(__file__).resolve().parent.parent
TABLE = "hr-bench-migrate"
DEPARTMENTS = ("Engineering", "Sales", "Support", "Finance")


def organization(number: int, people: int) -> LegacyOrganization:
    domain = f"org{number}.example"
    org = LegacyOrganization(f"Organisation {number}")
    departments = [org.department(name) for name in DEPARTMENTS]
    org.employee(f"admin@{domain}", "Ada", "Admin", role="admin")
    staff = [
        org.employee(f"p{index}@{domain}", f"First{index}", f"Last{index}", departments[index % len(departments)])
        for index in range(people)
    ]
    job = org.job(departments[0], "Engineer")
    for person in staff[::4]:
        org.apply(job, person)
    return org


def item_count(settings: DatastoreSettings, endpoint: str) -> int:
    client = make_client(settings, endpoint)
    total, start = 0, None
    while True:
        page = client.scan(TableName=TABLE, Select="COUNT", **({"ExclusiveStartKey": start} if start else {}))
        total += page["Count"]
        start = page.get("LastEvaluatedKey")
        if not start:
            return total


def main(argv: list[str]) -> int:
    organizations = int(argv[0]) if argv else 10
    people = int(argv[1]) if len(argv) > 1 else 200
    settings = Settings.load().datastore
    with DynamoDBLocal(settings.local_cache_dir) as engine:
        client = make_client(settings, engine.endpoint_url)
        create_legacy_table(client, TABLE)
        for number in range(organizations):
            organization(number, people).write(client, TABLE)
        items = item_count(settings, engine.endpoint_url)
        env = child_environment({"DYNAMODB_ENDPOINT": engine.endpoint_url, "HR_TABLE_NAME": TABLE})
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "server.py", "migrate", "--quiet"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
    print(f"server.py migrate: {organizations} organisations of {people} employees, {items:,} items in layout 0")
    print(f"  exit status {result.returncode} in {seconds:.1f} s: {1000 * seconds / items:.2f} s per 1,000 items")
    for line in result.stdout.splitlines():
        print(f"  | {line}")
    print(f"  load average while measured: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0 if result.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`python -m bench.imports` (`make bench-import`): bulk onboarding through the API.

On a fresh in-memory DynamoDB Local, one organisation with 10 departments:

1. 1,000 rows imported with importEmployees, 10 mutations of 100 (each row with a
   department and a hire date), one after another, as ``server.py import`` would send them;
2. the same 10 mutations again: every row UNCHANGED, nothing written;
3. for contrast, 1,000 other employees created one createEmployee at a time.

For each: wall time, DynamoDB requests, RCU and WCU (summed from each response's
``extensions.cost``). The server runs the product's default limits except
a 60 s deadline, so a slow machine shows a slow figure rather than a failed run.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.dataset import on_loop, provisioned
from bench.serving import API, Server, server_env
from datastore.dev.local import DynamoDBLocal
from datastore.kinds.entities import Employee, Organization, Plan
from datastore.table.store import Datastore
from datastore.tenancy.scope import TenantScope
from datastore.tenants import departments, organizations
from datastore.values.ids import new_id
from graphql_api.auth.tokens import issue_token
from graphql_api.execution import ids
from graphql_api.settings import Settings

# A loaded machine's DynamoDB Local can take longer than the production read timeout (1 s)
# for a transaction; the bench measures time, it does not test the timeout (nor do the tests).
READ_TIMEOUT = {"DYNAMODB_READ_TIMEOUT_SECONDS": "10"}
RESULTS = Path(__file__).parent / "results" / "imports.json"
DOMAIN = "onboard.example"
ROWS, BATCH = 1000, 100

IMPORT = """mutation Import($input: ImportEmployeesInput!) {
  importEmployees(input: $input) { created unchanged failed results { status error { code field message } } } }"""
CREATE = """mutation Create($input: CreateEmployeeInput!) {
  createEmployee(input: $input) { employee { id } } }"""


@dataclass
class Run:
    seconds: float = 0.0
    requests: int = 0
    rcu: float = 0.0
    wcu: float = 0.0
    mutations: int = 0
    slowest_ms: float = 0.0

    def add(self, cost: dict[str, Any], seconds: float) -> None:
        self.requests += cost["requestCount"]
        self.rcu += cost["readCapacityUnits"]
        self.wcu += cost["writeCapacityUnits"]
        self.mutations += 1
        self.slowest_ms = max(self.slowest_ms, seconds * 1000)

    def row(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 2),
            "mutations": self.mutations,
            "requests": self.requests,
            "rcu": round(self.rcu, 1),
            "wcu": round(self.wcu, 1),
            "slowest_mutation_ms": round(self.slowest_ms, 1),
        }


def post(http: httpx.Client, query: str, variables: dict[str, Any]) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    body: dict[str, Any] = http.post("/graphql", json={"query": query, "variables": variables}).json()
    elapsed = time.perf_counter() - started
    if "errors" in body:
        raise RuntimeError(f"the bench's mutation failed: {body['errors'][0]}")
    return body, elapsed


def rows(prefix: str, dept_ids: list[str]) -> list[dict[str, Any]]:
    hired = datetime(2026, 1, 5, 9, tzinfo=UTC)
    return [
        {
            "email": f"{prefix}{i}@{DOMAIN}",
            "firstName": f"Given{i}",
            "lastName": f"Family{i}",
            "departmentId": dept_ids[i % len(dept_ids)],
            "hiredAt": (hired + timedelta(days=i % 365)).isoformat(),
        }
        for i in range(ROWS)
    ]


def imported(http: httpx.Client, given: list[dict[str, Any]], expect: str) -> Run:
    run = Run()
    started = time.perf_counter()
    for start in range(0, len(given), BATCH):
        body, seconds = post(http, IMPORT, {"input": {"rows": given[start : start + BATCH]}})
        payload = body["data"]["importEmployees"]
        if payload[expect] != BATCH:
            raise RuntimeError(f"expected {BATCH} {expect}, got {payload}")
        run.add(body["extensions"]["cost"], seconds)
    run.seconds = time.perf_counter() - started
    return run


def created_one_at_a_time(http: httpx.Client, given: list[dict[str, Any]]) -> Run:
    run = Run()
    started = time.perf_counter()
    for row in given:
        body, seconds = post(http, CREATE, {"input": row})
        run.add(body["extensions"]["cost"], seconds)
    run.seconds = time.perf_counter() - started
    return run


def main() -> int:
    base = Settings.load(defaults=READ_TIMEOUT).datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        table_name = f"hr-bench-{new_id().lower()}"
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=table_name)

        async def seed(datastore: Datastore) -> tuple[Organization, Employee, list[str]]:
            org, admin = await organizations.create_organization(
                await provisioned(datastore),
                name="Onboarding Bench",
                plan=Plan.ENTERPRISE,
                email_domains=[DOMAIN],
                admin_email=f"admin@{DOMAIN}",
                admin_first_name="Ada",
                admin_last_name="Admin",
            )
            tenant = datastore.table(TenantScope(org.org_id, admin.emp_id))
            made = [await departments.create_department(tenant, name=f"Dept {d}") for d in range(10)]
            return org, admin, [ids.encode("Department", dept.dept_id) for dept in made]

        org, admin, dept_ids = on_loop(settings, seed)
        env = server_env(
            local.endpoint_url,
            table_name,
            COST_IN_RESPONSE="true",
            REQUEST_TIMEOUT_SECONDS="60",
            DYNAMODB_READ_TIMEOUT_SECONDS=str(base.read_timeout),
        )
        token = issue_token(
            API,
            subject=admin.emp_id,
            org_id=org.org_id,
            role="admin",
        )
        server = Server(env, "--default-limits")
        try:
            with httpx.Client(base_url=server.url, timeout=120, headers={"Authorization": f"Bearer {token}"}) as http:
                post(http, "{ me { email } }", {})  # warm the process
                given = rows("bulk", dept_ids)
                results = {
                    "import_1000_rows": imported(http, given, "created").row(),
                    "reimport_1000_rows_unchanged": imported(http, given, "unchanged").row(),
                    "create_employee_1000_times": created_one_at_a_time(http, rows("single", dept_ids)).row(),
                }
        finally:
            server.stop()
    print("\nBulk onboarding: 1,000 employees through the API (sums of each response's extensions.cost)")
    columns = ["seconds", "mutations", "requests", "rcu", "wcu", "slowest_mutation_ms"]
    print(f"{'':30}" + "".join(f"{c:>21}" for c in columns))
    for name, row in results.items():
        print(f"{name:30}" + "".join(f"{row[c]!s:>21}" for c in columns))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    print(f"\nwrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The floor: the minimum DynamoDB calls for each answer, straight from a stock boto3 client.

Calls of one level run concurrently on a thread pool; the answer is serialised with orjson.
Each function returns the JSON bytes and its stats (requests, waves, RCU, the minimum RCU).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson

from bench.dataset import Dataset, item_size
from datastore.aws.control_plane import local_client
from datastore.config import DatastoreSettings
from datastore.kinds import layout
from datastore.tenancy import keys

THREADS = 64
POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="floor")


def stock_client(settings: DatastoreSettings) -> Any:
    """A stock boto3 client of ``settings``' endpoint, a connection for each of the pool's threads."""
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "total_max_attempts": settings.max_attempts},
        max_pool_connections=THREADS,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
    )
    return local_client("dynamodb", settings.region, settings.endpoint_url, config, settings.environment_key)


@dataclass
class Stats:
    requests: int = 0
    waves: int = 0
    rcu: float = 0.0
    rcu_min: float = 0.0
    ops: dict[str, int] = field(default_factory=dict)

    def wave(self) -> None:
        self.waves += 1


def units(size: int) -> float:
    return 0.5 * math.ceil(size / 4096) if size else 0.5


class Floor:
    def __init__(self, client: Any, table: str, data: Dataset) -> None:
        self.client, self.table, self.data = client, table, data

    def _count(self, stats: Stats, op: str, response: dict[str, Any]) -> None:
        stats.requests += 1
        stats.ops[op] = stats.ops.get(op, 0) + 1
        consumed = response.get("ConsumedCapacity")
        for entry in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
            stats.rcu += float(entry.get("CapacityUnits", 0.0))

    def query(
        self, stats: Stats, pk: str, limit: int, *, index: bool = False, prefix: str | None = None, forward: bool = True
    ) -> list[dict[str, Any]]:
        pk_attr = keys.GSI1PK if index else keys.PK
        params: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": pk_attr},
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "Limit": limit,
            "ScanIndexForward": forward,
            "ReturnConsumedCapacity": "TOTAL",
        }
        if index:
            params["IndexName"] = keys.GSI1
        if prefix:
            params["KeyConditionExpression"] += " AND begins_with(#sk, :p)"
            params["ExpressionAttributeNames"]["#sk"] = keys.SK
            params["ExpressionAttributeValues"][":p"] = {"S": prefix}
        response = self.client.query(**params)
        self._count(stats, "Query", response)
        found: list[dict[str, Any]] = response["Items"]
        stats.rcu_min += units(sum(item_size(i) for i in found))
        return found

    def get(self, stats: Stats, key: keys.Key) -> dict[str, Any]:
        response = self.client.get_item(TableName=self.table, Key=key.wire(), ReturnConsumedCapacity="TOTAL")
        self._count(stats, "GetItem", response)
        item: dict[str, Any] = response["Item"]
        stats.rcu_min += units(item_size(item))
        return item

    def batch_get(self, stats: Stats, wanted: list[keys.Key]) -> dict[tuple[str, str], dict[str, Any]]:
        distinct = list(dict.fromkeys(wanted))
        chunks = [distinct[i : i + 100] for i in range(0, len(distinct), 100)]

        def one(chunk: list[keys.Key]) -> dict[str, Any]:
            response: dict[str, Any] = self.client.batch_get_item(
                RequestItems={self.table: {"Keys": [k.wire() for k in chunk]}}, ReturnConsumedCapacity="TOTAL"
            )
            return response

        found: dict[tuple[str, str], dict[str, Any]] = {}
        for response in POOL.map(one, chunks):
            self._count(stats, "BatchGetItem", response)
            for item in response["Responses"][self.table]:
                found[(item["PK"]["S"], item["SK"]["S"])] = item
                stats.rcu_min += units(item_size(item))
        return found

    def concurrently(self, *fns: Callable[[], Any]) -> list[Any]:
        return list(POOL.map(lambda fn: fn(), fns))

    # --- the queries ---------------------------------------------------------------------

    def q1(self) -> tuple[bytes, Stats]:
        s, org = Stats(), self.data.org_id
        s.wave()
        depts = self.query(s, keys.org_pk(org), 20, prefix=layout.DEPARTMENT.sort_prefix)
        s.wave()
        members = list(
            POOL.map(
                lambda d: self.query(
                    s, layout.MEMBERSHIP.partition(org, d["deptId"]["S"]), 50, prefix=layout.MEMBERSHIP.sort_prefix
                ),
                depts,
            )
        )
        body = {
            "organization": {
                "departments": {
                    "edges": [
                        {
                            "node": {
                                "name": d["name"]["S"],
                                "employees": {
                                    "edges": [
                                        {
                                            "node": {
                                                "email": e["email"]["S"],
                                                "firstName": e["firstName"]["S"],
                                                "lastName": e["lastName"]["S"],
                                                "role": e["role"]["S"].upper(),
                                                "status": e["status"]["S"].upper(),
                                                "hiredAt": e["hiredAt"]["S"],
                                            }
                                        }
                                        for e in emps
                                    ]
                                },
                            }
                        }
                        for d, emps in zip(depts, members, strict=True)
                    ]
                }
            }
        }
        return orjson.dumps({"data": body}), s

    def q2(self) -> tuple[bytes, Stats]:
        s, org = Stats(), self.data.org_id
        s.wave()
        open_jobs = self.query(s, layout.JOB_POSTING.index_partition(org), 20, index=True, forward=False)
        s.wave()
        apps = list(
            POOL.map(
                lambda j: self.query(
                    s,
                    layout.APPLICATION.partition(org, j["jobId"]["S"]),
                    50,
                    prefix=layout.APPLICATION.sort_prefix,
                    forward=False,
                ),
                open_jobs,
            )
        )
        s.wave()
        people = self.batch_get(s, [layout.EMPLOYEE.key_at(org, a["empId"]["S"]) for al in apps for a in al])
        s.wave()
        depts = self.batch_get(s, [layout.DEPARTMENT.key_at(org, e["departmentId"]["S"]) for e in people.values()])

        def employee(emp_id: str) -> dict[str, Any]:
            e = people[(keys.org_pk(org), layout.EMPLOYEE.key_at(org, emp_id).sk)]
            k = layout.DEPARTMENT.key_at(org, e["departmentId"]["S"])
            return {"email": e["email"]["S"], "department": {"name": depts[(k.pk, k.sk)]["name"]["S"]}}

        body = {
            "organization": {
                "jobPostings": {
                    "edges": [
                        {
                            "node": {
                                "title": j["title"]["S"],
                                "applications": {
                                    "edges": [
                                        {
                                            "node": {
                                                "status": a["status"]["S"].upper(),
                                                "employee": employee(a["empId"]["S"]),
                                            }
                                        }
                                        for a in al
                                    ]
                                },
                            }
                        }
                        for j, al in zip(open_jobs, apps, strict=True)
                    ]
                }
            }
        }
        return orjson.dumps({"data": body}), s

    def q3(self) -> tuple[bytes, Stats]:
        s, org, me_id = Stats(), self.data.org_id, self.data.profile.emp_id
        s.wave()
        me = self.get(s, layout.EMPLOYEE.key_at(org, me_id))
        s.wave()
        dept, apps = self.concurrently(
            lambda: self.get(s, layout.DEPARTMENT.key_at(org, me["departmentId"]["S"])),
            lambda: self.query(s, layout.APPLICATION.index_partition(org, me_id), 10, index=True, forward=False),
        )
        s.wave()
        manager, found_jobs = self.concurrently(
            lambda: self.get(s, layout.EMPLOYEE.key_at(org, dept["managerId"]["S"])),
            lambda: self.batch_get(s, [layout.JOB_POSTING.key_at(org, a["jobId"]["S"]) for a in apps]),
        )

        def title(job_id: str) -> str:
            k = layout.JOB_POSTING.key_at(org, job_id)
            return str(found_jobs[(k.pk, k.sk)]["title"]["S"])

        body = {
            "me": {
                "firstName": me["firstName"]["S"],
                "department": {"name": dept["name"]["S"], "manager": {"email": manager["email"]["S"]}},
                "applications": {
                    "edges": [
                        {"node": {"status": a["status"]["S"].upper(), "jobPosting": {"title": title(a["jobId"]["S"])}}}
                        for a in apps
                    ]
                },
            }
        }
        return orjson.dumps({"data": body}), s

    def q4(self) -> tuple[bytes, Stats]:
        s, org = Stats(), self.data.org_id
        s.wave()
        wanted = [layout.EMPLOYEE.key_at(org, e.emp_id) for e in self.data.employees[:100]]
        found = self.batch_get(s, wanted)
        body = {f"n{i}": {"email": found[(k.pk, k.sk)]["email"]["S"]} for i, k in enumerate(wanted)}
        return orjson.dumps({"data": body}), s

"""`python -m bench.client_cost [-n N] [--only NAME ...]`: CPU per DynamoDB call, alone and 16 in flight, by client.

On a fresh in-memory DynamoDB Local with the bench's dataset (warmed up as the bench warms
it), each client makes N calls one after another (alone), then N calls 16 at a time (c16),
from an asyncio event loop as the API does; the figure is the process's CPU
(``time.process_time``: the loop and every thread) over N, and the wall time per call. Two
calls: a 20-item Query (a department's members, the issue's measurement) and a 100-key
BatchGetItem (100 employees, the size the loaders send).

- ``aiodynamo``: the product's data path, ``Table`` over datastore/aws/client.py (signing,
  retries, the CRC32 check, the call log, orjson), on the loop.
- ``aiobotocore`` and ``aiobotocore + orjson`` (orjson in its ``before-parse`` hook), on the
  loop: the alternative weighed against it, only where aiobotocore is installed.
  It pins botocore below the version the lock holds, so it has a venv of its own: the lock's
  packages, then ``aiobotocore==3.10.0`` and ``boto3==1.43.117`` (docs/design/speed.md).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import orjson

from bench.dataset import seeded
from bench.floor import Floor, stock_client
from bench.warmup import warm_up
from datastore.dev.local import DynamoDBLocal
from datastore.kinds import layout
from datastore.table.store import Datastore
from datastore.tenancy.scope import TenantScope
from datastore.tenants import employees
from datastore.values import ids
from graphql_api.settings import Settings

Call = Callable[[], Awaitable[Any]]
Row = tuple[str, float, float, float, float]  # operation, CPU alone, CPU c16, wall alone, wall c16
CONCURRENCY = 16


async def measure(call: Call, n: int, concurrency: int) -> tuple[float, float]:
    """CPU ms and wall ms per call over ``n`` calls, ``concurrency`` at a time."""
    for _ in range(20):
        await call()
    remaining = iter(range(n))

    async def worker() -> None:
        for _ in remaining:
            await call()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return (time.process_time() - cpu) * 1000 / n, (time.perf_counter() - wall) * 1000 / n


def aiobotocore_variants(
    endpoint: str, table_name: str, params: dict[str, dict[str, Any]], opened: list[Any]
) -> dict[str, Any]:
    """Factories of aiobotocore's calls (made inside the loop), or none without aiobotocore;
    each client's context goes to ``opened``, to be closed on the loop that made it."""
    if importlib.util.find_spec("aiobotocore") is None:
        return {}
    from aiobotocore.config import AioConfig  # type: ignore[import-not-found, unused-ignore]
    from aiobotocore.session import get_session  # type: ignore[import-not-found, unused-ignore]

    def parse_success(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any) -> None:
        if 200 <= response_dict["status_code"] < 300:
            customized_response_dict.update(orjson.loads(response_dict["body"]))
            response_dict["body"] = b""

    def factory(fast: bool) -> Callable[[], Awaitable[dict[str, Call]]]:
        async def make() -> dict[str, Call]:
            config = AioConfig(
                max_pool_connections=64,
                retries={"mode": "standard", "total_max_attempts": 2},
                parameter_validation=False,
            )
            context = get_session().create_client(
                "dynamodb",
                endpoint_url=endpoint,
                region_name="us-east-1",
                aws_access_key_id="local",
                aws_secret_access_key="local",
                config=config,
            )
            client = await context.__aenter__()
            opened.append(context)
            if fast:
                for operation in ("Query", "BatchGetItem"):
                    client.meta.events.register(f"before-parse.dynamodb.{operation}", parse_success)
            return {
                "Query": lambda: client.query(**params["Query"]),
                "BatchGetItem": lambda: client.batch_get_item(**params["BatchGetItem"]),
            }

        return make

    return {"aiobotocore": factory(False), "aiobotocore + orjson": factory(True)}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.client_cost")
    parser.add_argument("-n", type=int, default=400)
    parser.add_argument("--only", nargs="*", help="clients to measure (names as printed)")
    args = parser.parse_args()
    base = Settings.load({}).datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-bench-{ids.new_id().lower()}")
        data = seeded(settings)
        floor = Floor(stock_client(settings), settings.table_name, data)
        print(warm_up(local.pid, [floor.q1, floor.q2, floor.q3, floor.q4]), flush=True)
        scope = TenantScope(data.org_id)
        department = data.departments[0].dept_id
        query = employees.department_employees(data.org_id, department)
        wanted = [layout.EMPLOYEE.key_at(data.org_id, e.emp_id) for e in data.employees[:100]]
        params = {
            "Query": {
                "TableName": settings.table_name,
                "KeyConditionExpression": "#pk = :pk",
                "ExpressionAttributeNames": {"#pk": "PK"},
                "ExpressionAttributeValues": {":pk": {"S": query.partition_key}},
                "Limit": 21,
                "ReturnConsumedCapacity": "TOTAL",
            },
            "BatchGetItem": {
                "RequestItems": {settings.table_name: {"Keys": [key.wire() for key in wanted]}},
                "ReturnConsumedCapacity": "TOTAL",
            },
        }
        datastore = Datastore(settings)
        opened: list[Any] = []

        async def on_loop() -> dict[str, Call]:
            table = datastore.table(scope)
            return {
                "Query": lambda: table.query(query.partition_key, limit=20),
                "BatchGetItem": lambda: table.batch_get(wanted),
            }

        variants: dict[str, Callable[[], Awaitable[dict[str, Call]]]] = {
            "aiodynamo": on_loop,
            **aiobotocore_variants(local.endpoint_url, settings.table_name, params, opened),
        }
        print(f"\nCPU and wall ms per call, {args.n} calls each, alone and {CONCURRENCY} in flight")
        print(f"{'client':24}{'operation':>14}{'cpu alone':>11}{'cpu c16':>10}{'wall alone':>12}{'wall c16':>10}")
        for name, make in variants.items():
            if args.only and name not in args.only:
                continue

            async def run(
                make: Callable[[], Awaitable[dict[str, Call]]] = make,
            ) -> list[tuple[str, float, float, float, float]]:
                made = await make()
                rows = []
                for operation, call in made.items():
                    alone = await measure(call, args.n, 1)
                    c16 = await measure(call, args.n, CONCURRENCY)
                    rows.append((operation, alone[0], c16[0], alone[1], c16[1]))
                await datastore.aclose()
                while opened:
                    await opened.pop().__aexit__(None, None, None)
                return rows

            for operation, cpu1, cpu16, wall1, wall16 in asyncio.run(run()):
                print(f"{name:24}{operation:>14}{cpu1:>11.3f}{cpu16:>10.3f}{wall1:>12.3f}{wall16:>10.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

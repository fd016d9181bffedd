"""`python -m bench.http_session`: one DynamoDB call's CPU and wall time, by transport.

The product's client (``datastore.client.make_client``) over libcurl, the same client with
botocore's urllib3 session put back, and the floor's stock client, each sending GetItem
(one small item) and Query (50 items of about 200 bytes) to a fresh DynamoDB Local, one
call after another on one thread. CPU is this process's (``time.process_time``); DynamoDB
Local runs in its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bench.warmup import warm_up
from datastore import ids, library_internals
from datastore.client import make_client
from datastore.dev.local import DynamoDBLocal
from datastore.provision import ensure_table
from graphql_api.settings import Settings

CALLS, WARM = 2000, 300


def per_call(call: Callable[[], Any], count: int = CALLS) -> tuple[float, float]:
    """Microseconds of CPU and of wall time per call, after WARM calls."""
    for _ in range(WARM):
        call()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(count):
        call()
    return (time.process_time() - cpu) / count * 1e6, (time.perf_counter() - wall) / count * 1e6


def one_call_each(client: Any, table: str) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """Creates ``table`` with 50 items of about 200 bytes in one partition; returns a GetItem of
    one of them and a Query of all 50, each called with the client to send it."""
    ensure_table(client, table)
    for n in range(50):
        item = {"PK": {"S": "P"}, "SK": {"S": f"S#{n:03}"}, "text": {"S": "x" * 160}, "n": {"N": str(n)}}
        client.put_item(TableName=table, Item=item)
    key = {"PK": {"S": "P"}, "SK": {"S": "S#001"}}
    values = {":p": {"S": "P"}}

    def get(c: Any) -> Any:
        return c.get_item(TableName=table, Key=key, ReturnConsumedCapacity="TOTAL")

    def query(c: Any) -> Any:
        return c.query(TableName=table, KeyConditionExpression="PK = :p", ExpressionAttributeValues=values, Limit=50)

    return get, query


def main() -> None:
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local:
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=f"hr-http-{ids.new_id().lower()}")
        product = make_client(settings)
        urllib3 = make_client(settings)
        library_internals.set_http_session(urllib3, library_internals.http_session(urllib3).fallback)
        stock = make_client(settings, stock=True)
        table = settings.table_name
        get, query = one_call_each(product, table)
        clients = {"product, libcurl": product, "product, urllib3": urllib3, "stock boto3": stock}
        print(warm_up(local.pid, [lambda: get(stock), lambda: query(stock)]), flush=True)
        print(f"{'us per call':20}{'GetItem cpu':>14}{'wall':>8}{'Query50 cpu':>14}{'wall':>8}")
        for name, client in clients.items():
            get_cpu, get_wall = per_call(lambda c=client: get(c))
            query_cpu, query_wall = per_call(lambda c=client: query(c), CALLS // 2)
            print(f"{name:20}{get_cpu:>14.0f}{get_wall:>8.0f}{query_cpu:>14.0f}{query_wall:>8.0f}", flush=True)


if __name__ == "__main__":
    main()

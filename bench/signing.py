"""`python -m bench.signing`: why per-scope credentials share one client (datastore/credentials.py).

Measures, against a local STS (moto's server, a dev dependency):
- a boto3 DynamoDB client per tenant: CPU time and memory to create one;
- one shared client choosing credentials per request: the cost of picking the scope's
  credentials at signing time, beside the SigV4 signature every request pays anyway.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from datastore.client import make_client, make_sts_client
from datastore.config import DatastoreSettings
from datastore.credentials import RoleCredentials, signing_for
from datastore.dev.local_sts import role_env, serving_sts
from datastore.scope import TenantScope

CLIENTS = 100
REQUESTS = 20_000
SIGNATURES = 2_000
# Clients are only created here, never used: no DynamoDB needs to listen.
LOCAL = "http://127.0.0.1:1"


def client_cost(make: Callable[[], Any]) -> tuple[float, float]:
    """Milliseconds of CPU and KiB of memory per DynamoDB client."""
    make().close()  # load what is loaded once per process first, as a server would
    started = time.process_time()
    clients = [make() for _ in range(CLIENTS)]
    elapsed = time.process_time() - started
    # Memory measured separately: tracing allocations slows creation several times over.
    tracemalloc.start()
    traced = [make() for _ in range(CLIENTS // 5)]
    held, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    for client in clients + traced:
        client.close()
    return elapsed / CLIENTS * 1e3, held / len(traced) / 1024


def choice_cost(credentials: RoleCredentials) -> float:
    """Microseconds per request to choose (cached) credentials at signing time."""
    scopes = [TenantScope(f"ORG{i:023d}") for i in range(2)]
    for scope in scopes:
        credentials.for_scope(scope).get_frozen_credentials()
    started = time.perf_counter()
    for i in range(REQUESTS):
        request = SimpleNamespace(context={})
        with signing_for(scopes[i % 2]):
            credentials.before_sign(request)
        request.context["signing"]["request_credentials"].get_frozen_credentials()
    return (time.perf_counter() - started) / REQUESTS * 1e6


def signature_cost(credentials: RoleCredentials) -> float:
    """Microseconds per SigV4 signature of a small DynamoDB request."""
    frozen = credentials.for_scope(TenantScope("ORG" + "0" * 23)).get_frozen_credentials()
    started = time.perf_counter()
    for _ in range(SIGNATURES):
        request = AWSRequest(
            "POST",
            "https://dynamodb.us-east-1.amazonaws.com/",
            data=b'{"TableName":"hr-api","Key":{}}',
            headers={"X-Amz-Target": "DynamoDB_20120810.GetItem"},
        )
        SigV4Auth(frozen, "dynamodb", "us-east-1").add_auth(request)
    return (time.perf_counter() - started) / SIGNATURES * 1e6


def main() -> None:
    with serving_sts() as url:
        settings = DatastoreSettings.from_env({**role_env(url), "DYNAMODB_ENDPOINT": LOCAL})
        assert settings.roles is not None
        credentials = RoleCredentials(make_sts_client(settings), settings.roles)
        ms, kib = client_cost(lambda: make_client(settings))
        print(f"client per tenant, by make_client: {ms:.1f} ms of CPU and {kib:.0f} KiB each")
        session = boto3.session.Session()
        ms, kib = client_cost(lambda: session.client("dynamodb", region_name="us-east-1", endpoint_url=LOCAL))
        print(f"client per tenant, from one shared boto3 session: {ms:.1f} ms of CPU and {kib:.0f} KiB each")
        print(f"shared client: choosing credentials {choice_cost(credentials):.1f} us per request")
        print(f"(the SigV4 signature itself: {signature_cost(credentials):.1f} us per request)")


if __name__ == "__main__":
    main()

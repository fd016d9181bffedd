"""`python -m bench.discovery [--samples N]`: GET /auth/discovery's time, a customer's domain against one nobody owns.

The endpoint answers both with the same bytes (the platform's provider), so only its timing
could tell which domains are customers': a customer's domain used to cost one more GetItem
(its organisation's provider record), +1.2-1.6 ms median. Both paths now do the same reads
(graphql_api/auth/home_realm.py). This prints each path's median over N samples (150 by
default), interleaved, on one keep-alive connection to a bench server (bench.serve) on a
fresh in-memory DynamoDB Local holding one organisation, and the difference. The platform's discovery document is
served on the loopback by a small HTTP server here (read once, then cached by the server).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from bench.dataset import on_loop, provisioned
from bench.serving import Server, server_env
from datastore.dev.local import DynamoDBLocal
from datastore.kinds.entities import Plan
from datastore.table.store import Datastore
from datastore.tenants import organizations
from datastore.values.ids import new_id
from graphql_api.settings import Settings

CUSTOMER = "someone@bench.example"  # a customer's organisation, with no provider of its own
CLIENT_ID = "hr-web"


@contextmanager
def platform_provider() -> Iterator[str]:
    """The platform provider's discovery document on the loopback; yields its issuer."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    issuer = f"http://127.0.0.1:{server.server_address[1]}"
    body = json.dumps(
        {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/auth",
            "token_endpoint": f"{issuer}/token",
            "jwks_uri": f"{issuer}/jwks",
        }
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # the stdlib names it `format`
            pass

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()


def sample(http: httpx.Client, email: str) -> float:
    started = time.perf_counter()
    response = http.get("/auth/discovery", params={"email": email})
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"discovery answered {response.status_code}: {response.text}")
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.discovery")
    parser.add_argument("--samples", type=int, default=150)
    args = parser.parse_args()
    base = Settings.load().datastore
    with DynamoDBLocal(base.local_cache_dir) as local, platform_provider() as issuer:
        table_name = f"hr-bench-{new_id().lower()}"
        settings = replace(base, endpoint_url=local.endpoint_url, table_name=table_name)

        async def seed(datastore: Datastore) -> None:
            await organizations.create_organization(
                await provisioned(datastore),
                name="Bench Corp",
                plan=Plan.FREE,
                email_domains=["bench.example"],
                admin_email="admin@bench.example",
                admin_first_name="Ada",
                admin_last_name="Admin",
            )

        on_loop(settings, seed)
        oidc = {"OIDC_ISSUER": issuer, "OIDC_AUDIENCE": CLIENT_ID, "OIDC_JWKS": f"{issuer}/jwks"}
        server = Server(server_env(local.endpoint_url, table_name, **oidc), quiet=True)
        try:
            with httpx.Client(base_url=server.url, timeout=10) as http:
                customer, unknown = [], []
                for _ in range(20):  # warm-up: connections, the cached document
                    sample(http, CUSTOMER)
                    sample(http, f"someone@{new_id().lower()}.example")
                for _ in range(args.samples):
                    customer.append(sample(http, CUSTOMER))
                    unknown.append(sample(http, f"someone@{new_id().lower()}.example"))
        finally:
            server.stop()
    customer_median, unknown_median = statistics.median(customer), statistics.median(unknown)
    print(f"GET /auth/discovery, median of {args.samples} samples each, interleaved:")
    print(f"  customer's domain (no provider of its own) {customer_median:6.2f} ms")
    print(f"  domain nobody owns                         {unknown_median:6.2f} ms")
    print(f"  difference                                 {customer_median - unknown_median:+6.2f} ms")


if __name__ == "__main__":
    main()

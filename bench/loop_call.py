"""`python -m bench.loop_call`: the read path's own CPU per DynamoDB call that needs no DynamoDB.

``python -m bench.client_cost`` gives a whole call on the event loop (the HTTP exchange, aiodynamo,
the call log, the items' scope check); on a shared machine a few microseconds in 250 are lost
in its noise. This times parts of a call in one process, best of several repeats (``timeit``):
signing, which aiodynamo does as it ships, and the parts this repository changed, each beside
what it replaced:

- signing a Query (aiodynamo's ``signed_dynamo_request``, as every call pays it), and of that
  the SigV4 signing key's derivation (``derive_signing_key``), which aiodynamo does again for
  every call: what a cached key would save (docs/design/speed.md);
- the key a call signs with (``ScopeKey.get_key``): asking botocore every call, for the
  process's refreshable role (its clock reads the local time zone through dateutil) and for
  a role session (``datastore/aws/credentials.py``, plain UTC), then reused as it is now;
- admitting a 20-item page: ``admit`` per item with the tenant's prefix rebuilt per item (as
  before), then ``admit_all`` with the prefix a ``TenantScope`` built once.
"""

from __future__ import annotations

import asyncio
import time
import timeit
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from aiodynamo import sign
from aiodynamo.credentials import Key
from botocore.credentials import Credentials, RefreshableCredentials

from datastore.aws import client
from datastore.aws.credentials import _SessionCredentials, utc_now
from datastore.table.scoped import admit, admit_all
from datastore.tenancy import keys
from datastore.tenancy.scope import TenantScope
from datastore.values.ids import OrgId
from datastore.values.items import Item

ORG = OrgId("01HZX3V7Q4M2N8P5R6S7T8V9W0")
PAGE = 20


def best_us(run: Callable[[], object], number: int = 20_000, repeat: int = 7) -> float:
    """CPU microseconds per run (this process's): the best of ``repeat`` timings."""
    return min(timeit.repeat(run, number=number, repeat=repeat, timer=time.process_time)) / number * 1e6


def signing() -> list[tuple[str, float]]:
    key = Key("AKIAEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
    payload = {
        "TableName": "hr",
        "KeyConditionExpression": "#p = :p",
        "ExpressionAttributeNames": {"#p": "PK"},
        "ExpressionAttributeValues": {":p": {"S": keys.org_pk(ORG) + "#EMP#01HZX3V7Q4M2N8P5R6S7T8V9W3#APP"}},
        "Limit": 4,
        "ReturnConsumedCapacity": "TOTAL",
    }
    endpoint = sign.make_default_endpoint("eu-west-1")
    instant = sign.Instant.now()
    return [
        (
            "signing a Query (aiodynamo's own)",
            best_us(
                lambda: sign.signed_dynamo_request(
                    key=key, payload=payload, action="Query", region="eu-west-1", endpoint=endpoint
                )
            ),
        ),
        (
            "  of which deriving the signing key",
            best_us(lambda: sign.derive_signing_key(key, instant, "eu-west-1")),
        ),
    ]


def key_for_a_call() -> list[tuple[str, float]]:
    expiry = datetime.now(UTC) + timedelta(hours=1)

    def issue() -> dict[str, str]:
        return {"access_key": "AKIAROLE", "secret_key": "s", "token": "t", "expiry_time": expiry.isoformat()}

    # The process's role on an instance or container: botocore's default clock (tzlocal).
    process = RefreshableCredentials.create_from_metadata(issue(), issue, "container-role")
    # A tenant's role session, as RoleCredentials.for_scope makes it (its clock plain UTC).
    role_session = _SessionCredentials(issue, 900, utc_now)
    role_session.get_frozen_credentials()

    def get(scope_key: client.ScopeKey) -> Callable[[], object]:
        def once() -> object:
            step = scope_key.get_key(None)  # type: ignore[arg-type]  # no HTTP needed
            try:
                step.send(None)
            except StopIteration as done:
                return done.value
            raise RuntimeError("get_key waited: a refresh was due")

        return once

    figures = []
    for label, credentials in (("the process's refreshable role", process), ("a role session", role_session)):
        asking = client.ScopeKey(credentials)
        asking.REUSE_SECONDS = 0.0  # type: ignore[misc]  # ask botocore every call, as before
        figures.append((f"the key for a call, asking botocore: {label}", best_us(get(asking), number=5_000)))
    figures.append(
        ("the key for a call, reused (now, either)", best_us(get(client.ScopeKey(role_session)), number=5_000))
    )
    figures.append(("the key for a call, static credentials", best_us(get(client.ScopeKey(Credentials("A", "S"))))))
    return figures


def admission() -> list[tuple[str, float]]:
    items: list[Item] = [
        {keys.PK: {"S": f"{keys.org_pk(ORG)}#EMP#{n:026d}"}, keys.SK: {"S": "#APP"}} for n in range(PAGE)
    ]

    class RebuiltPrefix(TenantScope):
        """The tenant check as it was: the prefix built again for every item."""

        def may_read(self, partition_key: str) -> bool:
            own = keys.org_pk(self.org_id)
            return partition_key == own or partition_key.startswith(own + keys.SEP)

    before, now = RebuiltPrefix(ORG), TenantScope(ORG)
    return [
        (
            f"admitting a {PAGE}-item page, per item, prefix rebuilt",
            best_us(lambda: [admit(before, i, keys.PK) for i in items]),
        ),
        (
            f"admitting a {PAGE}-item page, admit_all, prefix built once",
            best_us(lambda: admit_all(now, items, keys.PK)),
        ),
    ]


def main() -> None:
    asyncio.set_event_loop(None)
    print("CPU per call, microseconds (this process's CPU time, best of 7 repeats)")
    for label, figure in (*signing(), *key_for_a_call(), *admission()):
        print(f"  {label:<68} {figure:8.2f}")


if __name__ == "__main__":
    main()

"""A real STS for the credential tests, and what to read off both sides of it.

- ``AssumeRoleLog``: every AssumeRole an STS client made (role, session name, tags) and
  the access key it got back, read with botocore's event hooks on that client.
- ``SignatureLog``: every DynamoDB request a client sent, with the access key read from its
  SigV4 ``Authorization`` header (``Credential=<AKID>/...``) and its partition keys, read
  in the client's send hook: what went over the wire, after signing.
- ``role_world``: a Datastore configured with the three roles against that STS (its own
  data plane client, on the session's DynamoDB Local), both logs, and a clock to move.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aiodynamo.http.types import Request

from datastore.aws.calls import Call
from datastore.aws.client import AsyncDynamo, Mirror, process_credentials
from datastore.aws.control_plane import make_sts_client
from datastore.aws.credentials import RoleCredentials, utc_now
from datastore.config import DatastoreSettings, RoleSettings
from datastore.dev.local_sts import TENANT_ROLE, role_env
from datastore.table.store import Datastore
from datastore.tenancy import keys
from tests.blocking import run

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sts import STSClient

_CREDENTIAL = re.compile(r"Credential=([^/,]+)/")


@dataclass(frozen=True, slots=True)
class Assumed:
    role_arn: str
    session_name: str
    tags: dict[str, str]
    access_key: str


@dataclass
class AssumeRoleLog:
    """The AssumeRole calls one STS client made, in order."""

    calls: list[Assumed] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, sts: STSClient) -> AssumeRoleLog:
        log = cls()
        sts.meta.events.register("before-parameter-build.sts.AssumeRole", log._before)
        sts.meta.events.register("after-call.sts.AssumeRole", log._after)
        return log

    def _before(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["hr_assume"] = dict(params)

    def _after(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        params = context["hr_assume"]
        assumed = Assumed(
            role_arn=params["RoleArn"],
            session_name=params["RoleSessionName"],
            tags={tag["Key"]: tag["Value"] for tag in params.get("Tags", [])},
            access_key=parsed["Credentials"]["AccessKeyId"],
        )
        with self._lock:
            self.calls.append(assumed)

    def snapshot(self) -> list[Assumed]:
        with self._lock:
            return list(self.calls)

    def of_tags(self, role_arn: str, tags: dict[str, str]) -> list[Assumed]:
        return [a for a in self.snapshot() if a.role_arn == role_arn and a.tags == tags]

    def owner(self, access_key: str) -> Assumed | None:
        return next((a for a in self.snapshot() if a.access_key == access_key), None)


@dataclass(frozen=True, slots=True)
class Signed:
    operation: str
    access_key: str
    partition_keys: list[str]


@dataclass
class SignatureLog:
    """The DynamoDB requests one client sent, as signed."""

    requests: list[Signed] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, dynamo: AsyncDynamo, control: DynamoDBClient | None = None) -> SignatureLog:
        """Every request of ``dynamo`` (a Datastore's ``aio``), read in its send hook, and of the
        control plane's boto3 client ``control`` (botocore's ``before-send``), after signing."""
        log = cls()
        dynamo.hooks.add(log._before_async_send)
        if control is not None:
            control.meta.events.register("before-send.dynamodb", log._before_send, unique_id=f"hr-signed-{id(log)}")
        return log

    def _before_send(self, request: Any, **_: Any) -> None:
        self._record(request.headers, request.body)

    async def _before_async_send(self, request: Request) -> None:
        self._record(request.headers or {}, request.body)

    def _record(self, headers: Any, body: bytes | str | None) -> None:
        authorization = headers["Authorization"]
        if isinstance(authorization, bytes):
            authorization = authorization.decode()
        found = _CREDENTIAL.search(authorization)
        assert found is not None, authorization
        target = headers["X-Amz-Target"]
        operation = (target.decode() if isinstance(target, bytes) else target).split(".")[-1]
        params = json.loads(body or b"{}")
        signed = Signed(operation, found.group(1), Call(operation, params, 0.0).partition_keys())
        with self._lock:
            self.requests.append(signed)

    def stop(self, dynamo: AsyncDynamo, control: DynamoDBClient | None = None) -> None:
        dynamo.hooks.remove(self._before_async_send)
        if control is not None:
            control.meta.events.unregister("before-send.dynamodb", unique_id=f"hr-signed-{id(self)}")

    def snapshot(self) -> list[Signed]:
        with self._lock:
            return list(self.requests)

    def since(self, mark: int) -> list[Signed]:
        return self.snapshot()[mark:]


class Clock:
    """Our side's clock, which a test can move ahead (STS keeps real time)."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return utc_now() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"})


@dataclass
class RoleWorld:
    datastore: Datastore
    roles: RoleSettings
    assumed: AssumeRoleLog
    signed: SignatureLog
    clock: Clock

    def tenant_requests(self, requests: list[Signed]) -> dict[str, int]:
        """Requests per tenant, each checked to be signed by its own tenant's role session.

        A request is the tenant's whose AssumeRole (tenant role, tag ``org``) issued the
        access key it was signed with; every partition key it addresses must lie in that
        tenant (or be a lookup item it writes: identity, API key, refresh token, issuer,
        domain). Requests signed otherwise fail the check.
        """
        counts: dict[str, int] = {}
        for request in requests:
            owner = self.assumed.owner(request.access_key)
            assert owner is not None, f"{request} was not signed with an assumed role's key"
            assert owner.role_arn == TENANT_ROLE, f"{request} was signed by {owner}"
            org = owner.tags["org"]
            assert owner.session_name == f"org-{org}"
            for pk in request.partition_keys:
                # The lookup items a tenant's session writes outside its partitions
                # (datastore/aws/iam.py's tenant statements): identities, API key and refresh
                # token lookups, identity provider clients, and the domain markers it checks.
                written_outside = (
                    keys.is_identity_pk(pk)
                    or keys.is_api_key_lookup_pk(pk)
                    or keys.is_refresh_lookup_pk(pk)
                    or keys.is_issuer_pk(pk)
                    or keys.is_domain_pk(pk)
                )
                allowed = keys.in_tenant(pk, org) or (written_outside and request.operation in _WRITES)
                assert allowed, f"{request} signed for tenant {org} addresses {pk!r}"
            counts[org] = counts.get(org, 0) + 1
        return counts


@contextmanager
def role_world(settings: DatastoreSettings, table_name: str, sts_url: str, **env: str) -> Iterator[RoleWorld]:
    roles = RoleSettings.from_env(role_env(sts_url, **env))
    assert roles is not None
    configured = replace(settings, roles=roles, table_name=table_name)
    sts = make_sts_client(configured)
    clock = Clock()
    datastore = Datastore(configured, credentials=RoleCredentials(sts, roles, clock=clock))
    # A client of the world's own, as a process of its own would have: its log holds only the
    # world's requests, not those of the session's Tables on the same DynamoDB.
    datastore.aio = AsyncDynamo(Mirror.of(configured), process_credentials())
    signed = SignatureLog.of(datastore.aio, datastore.client)
    try:
        yield RoleWorld(datastore, roles, AssumeRoleLog.of(sts), signed, clock)
    finally:
        signed.stop(datastore.aio, datastore.client)
        run(datastore.aclose())
        datastore.close()
        sts.close()

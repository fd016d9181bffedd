"""Which AWS credentials sign a DynamoDB request: an STS role session per scope, cached.

With the role settings (TENANT_ROLE_ARN, SIGNIN_ROLE_ARN, PLATFORM_ROLE_ARN, EXPORT_ROLE_ARN,
LIFECYCLE_ROLE_ARN) every request a Table sends is signed with credentials of the role for the
Table's scope, from STS AssumeRole:

- ``TenantScope(org)``: the tenant role, with the session tag ``org=<orgId>``;
- ``SignInScope``: the sign-in role; ``ApiKeyScope`` too (session ``api-key``), and
  ``GatewayScope`` (a WebSocket connection's lookup on AWS, session ``ws-connection``);
- ``PlatformScope``: the platform role, plus the tag ``provisioning=<orgId>`` while creating
  that organisation; ``LayoutScope`` (the table's layout version) too (session ``layout``), and
  ``FeedScope`` (a stream reader's lease and checkpoints, session ``feed``);
- ``LifecycleScope(org, purpose)``: the export role for an export, the lifecycle role for a
  restore or an offboarding, each with the session tag ``org=<orgId>`` (session
  ``<purpose>-<orgId>``).

The roles' ``dynamodb:LeadingKeys`` policies (``datastore/aws/iam.py``) then hold each request to
the partitions its tags name. That is a second wall behind the Table's own scope check
(``datastore/tenancy/scope.py``), not a replacement for it. Requests sent outside a Table (DescribeTable
for readiness, creating the table) keep the process's own credentials. Without the settings
every request does, as before (local use).

Design: one client for every scope, credentials chosen per Table. A Table signs its calls with
``ScopeKey(credentials.for_scope(scope))`` (``datastore/aws/client.py``), which hands
aiodynamo the role session's current key; the connection pool stays one for every tenant.

Caching and refresh: one botocore ``DeferredRefreshableCredentials`` per role session (role
and tags), kept in a bounded LRU (ROLE_CACHE_SIZE; the least recently used session is
dropped). Its lock makes N concurrent requests of a tenant without valid credentials wait
for ONE AssumeRole. From ROLE_REFRESH_SECONDS before expiry, one request refreshes while the
others keep signing with the current credentials; in the last half of that window every
request waits for the one refresh. A credential's lifetime is taken in STS's clock
(``Expiration`` minus the response's ``Date``) and counted on ours from when we asked, so a
host clock that is off neither refreshes on every request nor signs with expired credentials.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from botocore.credentials import Credentials, DeferredRefreshableCredentials
from botocore.exceptions import BotoCoreError, ClientError

from datastore.aws import iam
from datastore.config import RoleSettings
from datastore.errors import ScopeViolation, Unavailable
from datastore.tenancy.scope import (
    ApiKeyScope,
    FeedScope,
    GatewayScope,
    LayoutScope,
    LifecycleScope,
    PlatformScope,
    Scope,
    SignInScope,
    TenantScope,
    WebhooksScope,
)

if TYPE_CHECKING:
    from mypy_boto3_sts import STSClient

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class RoleSession:
    """One AssumeRole: the role, the session's name (CloudTrail shows it) and its tags."""

    role_arn: str
    name: str
    tags: tuple[tuple[str, str], ...] = ()


def role_session(roles: RoleSettings, scope: Scope) -> RoleSession:
    """The role session that signs requests of ``scope``; refuses a scope no role serves."""
    if isinstance(scope, TenantScope):
        return RoleSession(roles.tenant_role_arn, f"org-{scope.org_id}", ((iam.ORG_TAG, scope.org_id),))
    if isinstance(scope, SignInScope):
        return RoleSession(roles.signin_role_arn, "sign-in")
    if isinstance(scope, ApiKeyScope):
        # Finding who a bearer key belongs to is sign-in's job too: the same role reads it.
        return RoleSession(roles.signin_role_arn, "api-key")
    if isinstance(scope, GatewayScope):
        # Which organisation a WebSocket connection is: a lookup before any tenant, as sign-in's.
        return RoleSession(roles.signin_role_arn, "ws-connection")
    if isinstance(scope, PlatformScope):
        if scope.provisioning is None:
            return RoleSession(roles.platform_role_arn, "platform")
        return RoleSession(
            roles.platform_role_arn,
            f"provisioning-{scope.provisioning}",
            ((iam.PROVISIONING_TAG, scope.provisioning),),
        )
    if isinstance(scope, LayoutScope):
        # The platform's own bookkeeping: the start-up check and the migration read and
        # write it (the platform role's DataLayout statement, datastore/aws/iam.py).
        return RoleSession(roles.platform_role_arn, "layout")
    if isinstance(scope, FeedScope):
        # The platform's own bookkeeping too: the platform role's StreamReader statement.
        return RoleSession(roles.platform_role_arn, "feed")
    if isinstance(scope, WebhooksScope):
        # Which organisations have webhook endpoints: the platform role's WebhookOrganizations.
        return RoleSession(roles.platform_role_arn, "webhooks")
    if isinstance(scope, LifecycleScope):
        # An export only reads (TenantExport); a restore or an offboarding writes too.
        role = roles.export_role_arn if scope.purpose == "export" else roles.lifecycle_role_arn
        return RoleSession(role, f"{scope.purpose}-{scope.org_id}", ((iam.ORG_TAG, scope.org_id),))
    raise ScopeViolation(f"no role signs for {scope.name}")


class _SessionCredentials(DeferredRefreshableCredentials):
    """A role session's credentials: fetched on first use, refreshed ahead of expiry."""

    def __init__(self, refresh_using: Callable[[], dict[str, str]], refresh_seconds: int, clock: Clock) -> None:
        super().__init__(refresh_using=refresh_using, method="sts-assume-role", time_fetcher=clock)
        # botocore's two windows (RefreshableCredentials sets the same attributes from its
        # constructor's advisory_timeout / mandatory_timeout, which this class lacks).
        self._advisory_refresh_timeout = refresh_seconds
        self._mandatory_refresh_timeout = refresh_seconds // 2


class RoleCredentials:
    """Credentials per scope from STS AssumeRole, in a bounded LRU of role sessions."""

    def __init__(self, sts: STSClient, roles: RoleSettings, *, clock: Clock = utc_now) -> None:
        self.sts = sts
        self.roles = roles
        self._clock = clock
        self._sessions: OrderedDict[RoleSession, Credentials] = OrderedDict()
        self._lock = threading.Lock()

    def for_scope(self, scope: Scope) -> Credentials:
        session = role_session(self.roles, scope)
        with self._lock:
            credentials = self._sessions.get(session)
            if credentials is not None:
                self._sessions.move_to_end(session)
                return credentials
            credentials = _SessionCredentials(
                functools.partial(self._assume, session), self.roles.refresh_seconds, self._clock
            )
            self._sessions[session] = credentials
            if len(self._sessions) > self.roles.cache_size:
                self._sessions.popitem(last=False)
            return credentials

    def cached(self) -> list[RoleSession]:
        """The role sessions held, least recently used first."""
        with self._lock:
            return list(self._sessions)

    def _assume(self, session: RoleSession) -> dict[str, str]:
        """botocore's refresh function: one AssumeRole, as the metadata botocore expects."""
        asked = self._clock()
        params: dict[str, Any] = {
            "RoleArn": session.role_arn,
            "RoleSessionName": session.name,
            "DurationSeconds": self.roles.session_seconds,
        }
        if session.tags:
            params["Tags"] = [{"Key": key, "Value": value} for key, value in session.tags]
        try:
            response = self.sts.assume_role(**params)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "Unknown")
            raise Unavailable(f"STS refused the credentials for {session.name} ({code})") from None
        except BotoCoreError as error:
            raise Unavailable(f"STS could not be reached for {session.name} ({type(error).__name__})") from None
        issued = response["Credentials"]
        return {
            "access_key": issued["AccessKeyId"],
            "secret_key": issued["SecretAccessKey"],
            "token": issued["SessionToken"],
            "expiry_time": (asked + _lifetime(issued["Expiration"], response)).isoformat(),
        }


def _lifetime(expiration: datetime, response: Any) -> timedelta:
    """How long the credentials last, in STS's own clock when its response says the time."""
    date = response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        now = parsedate_to_datetime(date) if date else utc_now()
    except (TypeError, ValueError):
        now = utc_now()
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return expiration - now

"""The one DynamoDB client of the data plane: aiodynamo on the event loop, for every read and write.

Every GetItem, Query, BatchGetItem, PutItem, UpdateItem, DeleteItem, TransactWriteItems and
BatchWriteItem runs here, on the event loop: no hop to an I/O thread and back, no thread
fighting the loop for the GIL (``python -m bench.client_cost``; the choice against aiobotocore
is in docs/design/speed.md). boto3 keeps only the control plane (creating and describing the
table, its TTL, its stream's reads) and STS, imported where those are made.

What aiodynamo does, as it ships: SigV4 signing (no patch of its signer: what signing costs
and the public seam that would make it cheaper are in docs/design/speed.md), the JSON protocol
and its typed errors; it makes one attempt per ``send_request`` (``OneAttempt``). What this
module adds:

- The attempts of each call (``send``), read or write, as the one retry policy decides
  (``datastore/aws/retries.py``: throttling, 5xx and transport failures retried with botocore's
  backoff, DYNAMODB_MAX_ATTEMPTS tries and none past the request's deadline, transaction
  conflicts on their own quicker schedule; a write only when it cannot have been applied or
  is idempotent, else it fails ``maybe_written``).
- Its connection settings come from ``DatastoreSettings`` (``Mirror.of``): the endpoint,
  region, timeouts, total attempts (DYNAMODB_MAX_ATTEMPTS) and pool size.
- Credentials per scope: each Table's requests are signed with its scope's credentials
  (``datastore/aws/credentials.py``: role sessions from STS), or the process's own: the
  environment's key when it gives one outright (``Mirror.key``, what botocore's chain would
  find first), else botocore's chain, imported only then. A refresh
  (an STS AssumeRole through boto3) runs on a thread, never on the loop; credentials that
  need none are read on the loop (``ScopeKey``).
- One pool of kept-alive connections per event loop (``datastore/aws/exchange.py``: a
  connection belongs to the loop it was made in; a process serves from one, tests and the
  bench run several), closed by ``aclose``.
- Every call recorded once, whatever its attempts (``datastore.aws.calls``: the request's
  CallLog, its loader batch and depth, the capacity it consumed), and every failure turned
  into the datastore's ``Unavailable`` (``unavailable``), whose ``maybe_written`` says
  whether any attempt of a write may have been applied. A refusal is ``Refused``
  (``datastore/errors.py``), with DynamoDB's code and answer for the Table to read.
- Call observers (``CallObservers``): each wraps every call, retries inside it; the app's
  tracing makes its span per DynamoDB call there (graphql_api/observability/tracing.py).
  Empty: one attribute read.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final

from aiodynamo import errors as dynamo_errors
from aiodynamo.client import Client
from aiodynamo.credentials import Credentials as AiodynamoCredentials
from aiodynamo.credentials import Key
from aiodynamo.http.types import HttpImplementation
from aiodynamo.models import RetryConfig, RetryTimeout
from yarl import URL

from datastore.aws import calls, retries
from datastore.aws.connections import Broken, NoAnswer, NotSent
from datastore.aws.exchange import HttpExchange, SendHooks, decoded, tls_context
from datastore.aws.fastparse import decode_binaries
from datastore.config import DatastoreSettings, EnvironmentKey, local_engine, outside_aws
from datastore.errors import DatastoreError, InProgress, Refused, Unavailable
from datastore.proxy import NO_PROXIES, Proxies

if TYPE_CHECKING:
    from botocore.credentials import Credentials

# What signs requests at a local endpoint when the environment gives no key (as control_plane.local_client).
_PLACEHOLDER: Final = Key("local", "local")


@dataclass(frozen=True)
class OneAttempt(RetryConfig):
    """aiodynamo's retry configuration for our clients: one attempt, never retried by aiodynamo.

    ``send`` makes the attempts, each one ``send_request`` under this configuration, as the
    call's ``policy`` decides (``datastore/aws/retries.py``), none past ``deadline`` (a request's,
    on the monotonic clock; None: no deadline). aiodynamo raises the attempt's error when its
    attempts end with ``RetryTimeout``.
    """

    policy: retries.Policy = retries.DEFAULT_POLICY
    deadline: float | None = None

    def delays(self) -> Iterator[float]:
        yield 0

    def attempts(self) -> AsyncIterator[None]:
        return _Once()


class _Once:
    """One attempt, as an iterator object rather than an async generator.

    aiodynamo returns from inside its ``async for`` when an attempt succeeds, leaving the
    iterator unfinished. An unfinished async generator is closed when collected by the
    event loop's finalizer hook, which schedules its ``aclose()`` as a task through
    ``call_soon_threadsafe`` (a write to the loop's wake-up pipe): one task and one wake-up
    per DynamoDB call, 22 of each for Q1 (``python -m bench.profile Q1 --count``). An object
    with ``__anext__`` has nothing to close.
    """

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made = False

    def __aiter__(self) -> _Once:
        return self

    async def __anext__(self) -> None:
        if self._made:
            raise RetryTimeout()
        self._made = True


class ScopeKey(AiodynamoCredentials):
    """aiodynamo's view of a botocore credentials object (a role session's, or the process's).

    Fresh credentials are read on the loop; when botocore says a refresh is due (the first
    use of a role session, its refresh window), ``get_frozen_credentials`` runs on a thread:
    botocore then refreshes (one AssumeRole for all concurrent callers, its own lock) while
    the loop goes on.

    The key read is reused for ``REUSE_SECONDS`` before botocore is asked again: asking costs
    two readings of its clock, and the process's refreshable credentials (an instance's or a
    container's role) read the local time zone through dateutil, about 15 us per call (a
    role session's clock is plain UTC: about 3; reused, 0.3; ``python -m bench.loop_call``).
    botocore refreshes minutes ahead of expiry, so a key a second old is still valid.

    Without botocore credentials it signs with ``placeholder``: the environment's key
    (``Mirror.key``), a local engine's stand-in, or nothing (the call then fails).
    """

    REUSE_SECONDS: ClassVar[float] = 1.0

    def __init__(self, credentials: Credentials | None, *, placeholder: Key | None = None) -> None:
        self._credentials = credentials
        self._placeholder = placeholder
        self._key: Key | None = None
        self._read_at = 0.0  # time.monotonic() when _key was read

    async def get_key(self, http: HttpImplementation) -> Key | None:
        credentials = self._credentials
        if credentials is None:
            return self._placeholder  # None: aiodynamo fails the call (NoCredentialsFound)
        key = self._key
        if key is not None and time.monotonic() - self._read_at < self.REUSE_SECONDS:
            return key
        # A RefreshableCredentials (a role session's, an instance's role) says when it is due.
        refresh_needed = getattr(credentials, "refresh_needed", None)
        if refresh_needed is not None and refresh_needed():
            frozen = await asyncio.get_running_loop().run_in_executor(None, credentials.get_frozen_credentials)
        else:
            frozen = credentials.get_frozen_credentials()
        if frozen.access_key is None or frozen.secret_key is None:
            self._key = None
            return None
        key = self._key = Key(frozen.access_key, frozen.secret_key, frozen.token)
        self._read_at = time.monotonic()
        return key

    def invalidate(self) -> bool:
        # An expired token is refused, not retried, as botocore refuses it.
        return False

    def is_disabled(self) -> bool:
        return False


CallObserver = Callable[[str], AbstractContextManager[object]]
"""Given a call's operation name, a context entered around the whole call (every attempt) and
left with its outcome: the exception it raises, if any, passes through it."""


class CallObservers:
    """What watches every call of one event loop client; thread-safe to change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.observers: tuple[CallObserver, ...] = ()

    def add(self, observer: CallObserver) -> None:
        with self._lock:
            if observer not in self.observers:
                self.observers = (*self.observers, observer)


@dataclass(frozen=True, slots=True)
class Mirror:
    """Where and how the client connects: what ``DatastoreSettings`` say of DynamoDB."""

    endpoint: URL
    region: str
    connect_timeout: float
    read_timeout: float
    attempts: int
    pool_size: int
    # The CA bundle TLS is verified with (None: botocore's default), as the boto3 client's.
    ca_bundle: str | None = None
    # The proxies of DatastoreSettings (HTTPS_PROXY, HTTP_PROXY, NO_PROXY).
    proxies: Proxies = NO_PROXIES
    # The process's key as the environment gives it (DatastoreSettings.environment_key); None:
    # botocore's credential chain finds the process's credentials. Out of the repr: a secret.
    key: EnvironmentKey | None = field(default=None, repr=False)

    @classmethod
    def of(cls, settings: DatastoreSettings, endpoint_url: str | None = None) -> Mirror:
        """``endpoint_url`` (DynamoDB Local's) else the settings' endpoint, else AWS's regional one."""
        endpoint = endpoint_url or settings.endpoint_url or regional_endpoint(settings.region)
        return cls(
            endpoint=URL(endpoint),
            region=settings.region,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
            attempts=settings.max_attempts,
            pool_size=settings.pool_size,
            ca_bundle=ca_bundle() if endpoint.startswith("https:") else None,
            proxies=settings.proxies,
            key=settings.environment_key,
        )


def regional_endpoint(region: str) -> str:
    """DynamoDB's endpoint in ``region``, as botocore resolves it."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://dynamodb.{region}.{suffix}"


def ca_bundle() -> str | None:
    """What botocore itself verifies TLS with: AWS_CA_BUNDLE or ca_bundle in the AWS config
    (None: its default bundle). Every client to AWS verifies with it."""
    import botocore.session

    bundle: str | None = botocore.session.get_session().get_config_variable("ca_bundle")
    return bundle


def process_credentials() -> Credentials | None:
    """The process's own AWS credentials as botocore's chain finds them (environment, profile,
    container or instance role); ``AsyncDynamo.of`` asks only when ``Mirror.key`` is None."""
    import botocore.session

    credentials: Credentials | None = botocore.session.get_session().get_credentials()
    return credentials


class AsyncDynamo:
    """The data plane's client for one set of connection settings (``of``): its connection
    pools, its send hooks and call observers, shared by every Datastore on those settings."""

    def __init__(
        self, mirror: Mirror, process_credentials: Credentials | None, *, policy: retries.Policy | None = None
    ) -> None:
        self.mirror = mirror
        # How its calls are retried: DYNAMODB_MAX_ATTEMPTS tries with botocore's backoff by default.
        self.policy = retries.Policy.of(mirror.attempts) if policy is None else policy
        self.hooks = SendHooks()
        self.observers = CallObservers()
        # Local engines accept any credentials (client.local_client signs with a placeholder too).
        local = outside_aws(mirror.endpoint.host)
        key = mirror.key
        if process_credentials is None and key is not None:
            # The environment's key, which botocore's chain would find first: it signs as is.
            self._process = ScopeKey(None, placeholder=Key(key.access_key, key.secret_key, key.token))
        else:
            self._process = ScopeKey(process_credentials, placeholder=_PLACEHOLDER if local else None)
        # The process's clients without a deadline, one per policy (most Tables use the default one).
        self._clients: dict[retries.Policy, Client] = {}
        self.exchange = HttpExchange(
            self.hooks,
            pool_size=mirror.pool_size,
            connect_timeout=mirror.connect_timeout,
            read_timeout=mirror.read_timeout,
            tls=tls_context(mirror.ca_bundle) if mirror.endpoint.scheme == "https" else None,
            proxies=mirror.proxies,
        )

    @classmethod
    def of(cls, mirror: Mirror) -> AsyncDynamo:
        """The one for ``mirror``: every Datastore on the same settings shares its connections,
        hooks and observers."""
        with _shared_lock:
            dynamo = _shared.get(mirror)
            if dynamo is None:
                # botocore's chain only when the environment does not give the key outright, and
                # never for a local engine (datastore.config.local_engine).
                chain = mirror.key is None and not local_engine(str(mirror.endpoint))
                credentials = process_credentials() if chain else None
                dynamo = _shared[mirror] = cls(mirror, credentials)
            return dynamo

    def client(
        self,
        credentials: ScopeKey | None = None,
        *,
        deadline: float | None = None,
        policy: retries.Policy | None = None,
    ) -> Client:
        """An aiodynamo client signing with ``credentials`` (the process's by default), whose
        calls through ``send`` are retried by ``policy`` (this client's by default), none that
        could not end before ``deadline`` (``time.monotonic()``'s clock; a request's); it sends
        on whichever event loop awaits it."""
        policy = self.policy if policy is None else policy
        shareable = credentials is None and deadline is None
        if shareable and (shared := self._clients.get(policy)) is not None:
            return shared
        client = Client(
            self.exchange,
            credentials or self._process,
            self.mirror.region,
            endpoint=self.mirror.endpoint,
            throttle_config=OneAttempt(policy=policy, deadline=deadline),
        )
        if shareable:
            self._clients[policy] = client
        return client

    async def aclose(self) -> None:
        """Close the running loop's connections (the app's lifespan, at shutdown)."""
        await self.exchange.aclose()


_shared: dict[Mirror, AsyncDynamo] = {}
_shared_lock = threading.Lock()


async def send(
    client: Client, operation: str, payload: dict[str, Any], observers: CallObservers | None = None
) -> dict[str, Any]:
    """One call, read or write: recorded in the request's CallLog, inside each of ``observers``,
    its attempts made as the retry policy decides (``datastore/aws/retries.py``), its failure an
    ``Unavailable`` (a write's says whether it may have been applied, ``maybe_written``).

    ``client`` is one of ``AsyncDynamo.client``'s: its configuration carries the policy and
    the deadline, and keeps aiodynamo to one attempt per ``send_request``.
    """
    with ExitStack() as stack:
        for observe in () if observers is None else observers.observers:
            stack.enter_context(observe(operation))
        return await _send(client, operation, payload)


async def _send(client: Client, operation: str, payload: dict[str, Any]) -> dict[str, Any]:
    config = client.throttle_config
    if not isinstance(config, OneAttempt):
        raise TypeError("send takes a client of AsyncDynamo.client (its attempts are the retry policy's)")
    attempts = config.policy.attempts(operation, payload, config.deadline)
    call = calls.begin(operation, payload)
    error_name = "cancelled"
    parsed: dict[str, Any]
    try:
        while True:
            started = time.monotonic()
            try:
                with decoded() as slot:
                    raw = await client.send_request(action=operation, payload=payload)
            except DatastoreError as error:  # credentials that could not be had (STS)
                error_name = type(error).__name__
                raise
            except Exception as error:
                failure = retries.failure_of(error)
                verdict = attempts.after(failure, time.monotonic() - started)
                if verdict is retries.Verdict.RETRY:
                    await attempts.wait()
                    continue
                if verdict is retries.Verdict.WRITTEN:
                    parsed = {}  # its own earlier attempt put the item: done
                    break
                error_name = type(error).__name__
                raise given_up(error, failure, attempts) from None
            parsed = slot.value if slot.value is not None else raw
            break
    except BaseException:
        if call is not None:
            calls.fail(call, error_name)
        raise
    if call is not None:
        calls.finish(call, parsed)
    return parsed


def given_up(error: Exception, failure: retries.Failure, attempts: retries.Attempts) -> Unavailable:
    """The typed failure of a call given up after ``error`` (its last attempt's)."""
    maybe_written = attempts.maybe_written
    if failure.kind is retries.Kind.IN_PROGRESS:
        return InProgress()  # the first transaction under the token may still commit
    if failure.kind is retries.Kind.REFUSED:
        if failure.code == retries.CONDITIONAL_CHECK_FAILED and maybe_written:
            # A put of a new item refused on its retry by an item that is not the one it
            # put: its own first attempt, changed since, or another writer's; it cannot tell.
            return Unavailable("DynamoDB did not confirm the write", maybe_written=True, cause=failure.code)
        body = dict(failure.body or {})
        decode_binaries(body)  # as a successful answer's items are handed out
        return Refused(failure.code, body, maybe_written=maybe_written)
    if failure.kind is retries.Kind.THROTTLED:  # a throttled transaction's cancellation too, not only a 400
        return Unavailable("DynamoDB is throttling requests", maybe_written=maybe_written, cause=failure.code)
    if failure.kind is retries.Kind.CONFLICT:
        return Unavailable(
            f"the transaction kept conflicting after {attempts.made} tries",
            maybe_written=maybe_written,
            cause=failure.code,
        )
    return unavailable(error, maybe_written=maybe_written)


_THROTTLED: Final = (
    dynamo_errors.Throttled,
    dynamo_errors.ProvisionedThroughputExceeded,
    dynamo_errors.RequestLimitExceeded,
    dynamo_errors.LimitExceeded,
)
_FAILED: Final = (dynamo_errors.InternalDynamoError, dynamo_errors.ServiceUnavailable)


def unavailable(error: Exception, *, maybe_written: bool = False) -> Unavailable:
    """The typed form of a failed call given up after ``error`` (its last attempt's); ``cause``
    (the server log's) is DynamoDB's error code or the transport's failure, and the message
    names no backend exception. ``maybe_written``: any attempt of a write may have been applied."""
    cause = _code(error)
    if isinstance(error, _THROTTLED):
        return Unavailable("DynamoDB is throttling requests", maybe_written=maybe_written, cause=cause)
    if isinstance(error, _FAILED) or (isinstance(error, dynamo_errors.UnknownError) and error.status >= 500):
        return Unavailable("DynamoDB failed to answer", maybe_written=maybe_written, cause=cause)
    if isinstance(error, NoAnswer | asyncio.TimeoutError):
        return Unavailable("DynamoDB did not answer in time", maybe_written=maybe_written, cause=cause)
    if isinstance(error, NotSent | Broken | OSError):
        return Unavailable("DynamoDB could not be reached", maybe_written=maybe_written, cause=cause)
    if isinstance(error, dynamo_errors.AIODynamoError):
        return Unavailable("DynamoDB refused the request", maybe_written=maybe_written, cause=cause)
    return Unavailable("DynamoDB could not be reached", maybe_written=maybe_written, cause=cause)


def _body(error: Exception) -> dict[str, Any]:
    """DynamoDB's JSON answer to a failed call (aiodynamo keeps it as the error's argument,
    or its bytes when it could not make its typed error of it)."""
    if isinstance(error, dynamo_errors.UnknownError):
        try:
            body = json.loads(error.body)
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}
    body = error.args[0] if error.args else None
    return body if isinstance(body, dict) else {}


def _code(error: Exception) -> str:
    """DynamoDB's error code when its answer named one (aiodynamo keeps the body as its argument)."""
    body = _body(error) if isinstance(error, dynamo_errors.AIODynamoError) else None
    if isinstance(error, dynamo_errors.UnknownError) and not (body and isinstance(body.get("__type"), str)):
        return f"HTTP {error.status}"
    if isinstance(body, dict) and isinstance(body.get("__type"), str):
        return str(body["__type"]).rsplit("#", 1)[-1]
    if isinstance(error, NotSent | NoAnswer | Broken):
        return f"{type(error).__name__}: {error}"
    return type(error).__name__

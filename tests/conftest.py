"""Fixtures shared by every suite: a running DynamoDB Local, a fresh table, tenant factories.

DynamoDB Local starts in memory on a free port once per test session (or the suite uses
DYNAMODB_ENDPOINT when it is set). Each test gets organisations of its own, so tests share
one table without seeing each other's data.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pytest

# The suite tests behaviour, not the production read timeout (1 s): a cold DynamoDB Local on
# a busy machine can take longer for its first calls. Nor the connect timeout (0.5 s): a test
# that sends a hundred calls at once from one event loop opens that many connections at once,
# and on a busy machine some take longer to be accepted, each then an attempt more. Servers
# started by tests inherit both; tests/test_outages.py sets the production timeouts explicitly.
os.environ.setdefault("DYNAMODB_READ_TIMEOUT_SECONDS", "10")
os.environ.setdefault("DYNAMODB_CONNECT_TIMEOUT_SECONDS", "5")

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo, Mirror
from datastore.aws.control_plane import make_client
from datastore.aws.retries import Policy, Schedule
from datastore.config import DatastoreSettings
from datastore.dev.local import DynamoDBLocal
from datastore.dev.local_sts import serving_sts
from datastore.kinds.entities import Department, Employee, Organization, Plan, Role
from datastore.table.scoped import Table
from datastore.table.store import Datastore
from datastore.tenancy.scope import LayoutScope, PlatformScope, Scope, TenantScope
from datastore.tenants import departments, employees, organizations
from datastore.upkeep.provision import ensure_table, stream_arn
from datastore.values import ids
from tests import key_guard
from tests.blocking import on_every_loop, run

# The live API server and its clients, registered once for every suite that uses them (the API's
# and the bench's): fixtures imported into a second conftest would be a second session copy,
# another server and another load of the demo data.
pytest_plugins = ["tests.graphql_api.fixtures"]

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture(scope="session")
def dynamodb_endpoint() -> Iterator[str]:
    configured = os.environ.get("DYNAMODB_ENDPOINT")
    if configured:
        yield configured
        return
    with DynamoDBLocal(DatastoreSettings.from_env(os.environ).local_cache_dir) as local:
        yield local.endpoint_url


@pytest.fixture(scope="session")
def settings(dynamodb_endpoint: str) -> DatastoreSettings:
    return replace(
        DatastoreSettings.from_env(os.environ),
        endpoint_url=dynamodb_endpoint,
        embedded=False,
        table_name=f"hr-test-{ids.new_id().lower()}",
    )


@pytest.fixture(scope="session")
def client(settings: DatastoreSettings) -> DynamoDBClient:
    """The control plane's boto3 client (tables, TTL, streams), and bulk setup written straight to the table."""
    return calls.instrument(make_client(settings))


@pytest.fixture(scope="session")
def dynamo(settings: DatastoreSettings) -> Iterator[AsyncDynamo]:
    """The data plane's client for the session's DynamoDB: the one every Datastore on these
    settings shares (the in-process servers' too), so its send hooks see their calls as well."""
    shared = AsyncDynamo.of(Mirror.of(settings))
    yield shared
    on_every_loop(shared.aclose)  # the session loops' connections (tests/blocking.py)


def table_on(dynamo: AsyncDynamo, name: str, scope: Scope | None = None, **options: Any) -> Table:
    """A Table of ``name`` in ``scope`` (the platform's by default) with the suite's fast retries."""
    options.setdefault("retry", TEST_RETRY)
    return Table(dynamo, name, PlatformScope() if scope is None else scope, **options)


def provisioned(client: DynamoDBClient, dynamo: AsyncDynamo, name: str) -> bool:
    """``ensure_table`` for the table ``name``, from a synchronous test; True when it was created."""
    return run(ensure_table(client, table_on(dynamo, name, LayoutScope())))


DatastoreFactory = Callable[..., Datastore]


@pytest.fixture(scope="session")
def new_datastore(settings: DatastoreSettings) -> DatastoreFactory:
    """``new_datastore(table_name, **options)``: a Datastore serving ``table_name`` on the
    session's DynamoDB, as a server process makes one (``options`` as ``Datastore``'s:
    credentials, feed), without a change feed."""

    def make(table_name: str, **options: Any) -> Datastore:
        # No change feed (live updates) unless ``feed`` is given: its lease renewals and polls
        # would be calls of every test's server, counted with the requests' own, on tables most
        # of which have no stream. The live suites give theirs one (subscriptions/conftest.py).
        return Datastore(replace(settings, table_name=table_name), **options)

    return make


@pytest.fixture(scope="session")
def sts_endpoint() -> Iterator[str]:
    """A real STS endpoint on the loopback: moto's server mode (datastore/dev/local_sts.py)."""
    with serving_sts() as url:
        yield url


@pytest.fixture(scope="session")
def table_name(client: DynamoDBClient, dynamo: AsyncDynamo, settings: DatastoreSettings) -> Iterator[str]:
    """The session's table, most suites' data, with its stream off: DynamoDB Local makes every
    write to a table with a stream dearer (the suites of tests/datastore and
    tests/graphql_api/schema took 411 s with it on, 255 s off), and only the suites of live
    updates read one. They have ``streamed_table_name``.

    It is still off at the end, or the session fails: ``server.py run`` (and ``migrate``) turn
    their table's stream on, so a server process of a test belongs on ``streamed_table_name``."""
    provisioned(client, dynamo, settings.table_name)
    client.update_table(TableName=settings.table_name, StreamSpecification={"StreamEnabled": False})
    yield settings.table_name
    assert stream_arn(client, settings.table_name) is None, (
        "a test turned the session table's stream on (a server process on it?): use streamed_table_name"
    )


@pytest.fixture(scope="session")
def streamed_table_name(client: DynamoDBClient, dynamo: AsyncDynamo, settings: DatastoreSettings) -> str:
    """A second table of the session, with its stream (as ``ensure_table`` makes every table):
    for the suites whose servers read the change feed (tests/graphql_api/subscriptions/conftest.py)
    and for servers run as an operator runs them, which turn a table's stream on at start."""
    name = f"{settings.table_name}-streamed"
    provisioned(client, dynamo, name)
    return name


# Fast retries: tests exercise the bound, not the wait. DYNAMODB_MAX_ATTEMPTS's default tries
# of a failed call; 8 of a transaction conflict and of what a batch left unprocessed, as in production.
TEST_RETRY = Policy(
    standard=Schedule(attempts=2, base=0.005, cap=0.05),
    conflicts=Schedule(attempts=8, base=0.005, cap=0.05),
    unprocessed=Schedule(attempts=8, base=0.005, cap=0.05),
)


@pytest.fixture
def platform(dynamo: AsyncDynamo, table_name: str) -> Table:
    return table_on(dynamo, table_name)


@dataclass(frozen=True)
class Tenant:
    """An organisation of the test's own, with its admin and a Table in its scope."""

    organization: Organization
    admin: Employee
    table: Table

    @property
    def org_id(self) -> str:
        return self.organization.org_id

    @property
    def domain(self) -> str:
        """The organisation's own email domain, unique to this test."""
        return self.organization.email_domains[0]

    def email(self, local: str) -> str:
        """An address in the organisation's own domain."""
        return f"{local}@{self.domain}"

    def department(self, name: str = "Engineering") -> Department:
        return run(departments.create_department(self.table, name=name))

    def employee(
        self, department: Department | None = None, *, role: Role = Role.EMPLOYEE, email: str | None = None
    ) -> Employee:
        unique = ids.new_id().lower()
        return run(
            employees.create_employee(
                self.table,
                email=email or self.email(f"e{unique}"),
                first_name="Test",
                last_name=f"Person {unique[-6:]}",
                department_id=None if department is None else department.dept_id,
                role=role,
            )
        )


TenantFactory = Callable[..., Tenant]


def unique_domain() -> str:
    """An email domain no other organisation of the session holds."""
    return f"t{ids.new_id().lower()}.example"


def new_tenant(platform: Table, name: str = "Test Org") -> Tenant:
    """An organisation of its own, with its admin, in ``platform``'s table."""
    unique = ids.new_id().lower()
    domain = unique_domain()
    org, admin = run(
        organizations.create_organization(
            platform,
            name=f"{name} {unique[-6:]}",
            plan=Plan.PRO,
            email_domains=[domain],
            admin_email=f"admin{unique}@{domain}",
            admin_first_name="Ada",
            admin_last_name="Admin",
        )
    )
    table = platform.with_scope(TenantScope(org.org_id, admin.emp_id))
    # As a request's session does with its active check's read (datastore/table/retention.py).
    table.retention.know(org)
    return Tenant(org, admin, table)


@pytest.fixture
def make_tenant(platform: Table) -> TenantFactory:
    def make(name: str = "Test Org") -> Tenant:
        return new_tenant(platform, name)

    return make


@pytest.fixture
def tenant(make_tenant: TenantFactory) -> Tenant:
    return make_tenant()


@pytest.fixture
def streamed_tenant(dynamo: AsyncDynamo, streamed_table_name: str) -> Tenant:
    """A tenant in ``streamed_table_name``: for a server process that serves that table."""
    return new_tenant(table_on(dynamo, streamed_table_name))


@pytest.fixture
def call_log() -> Iterator[calls.CallLog]:
    """Every DynamoDB call the test makes from here on, from any thread."""
    with calls.listening() as log:
        yield log


# --- the key guard (tests/key_guard.py, checked by tests/graphql_api/test_key_guard.py) ------


@pytest.fixture(scope="session", autouse=True)
def session_requests() -> Iterator[key_guard.Findings]:
    """Every DynamoDB request of the whole session, from any thread, checked test by test."""
    findings = key_guard.Findings()
    with calls.listening() as log:
        findings.log = log
        yield findings


@pytest.fixture(autouse=True)
def _key_guard(session_requests: key_guard.Findings, request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    session_requests.check(request.node.nodeid)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the key guard last, so it sees the requests of every other test."""
    items.sort(key=lambda item: item.path.name == key_guard.MODULE)

"""Entry point: ``python server.py [run]`` serves the API; the other commands are tools."""

from __future__ import annotations

from graphql_api.entrypoints.heap import build_without_collecting, resume_collecting, settle_heap

if __name__ == "__main__":  # the program, not a module imported (by a test, say)
    build_without_collecting()  # before the imports below; run() settles the heap, main() resumes collecting

import argparse
import asyncio
import contextlib
import functools
import gzip
import json
import logging
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Never, TextIO, TypeVar

import uvicorn

from datastore.aws import calls, probe
from datastore.aws.iam import ROLES, policies
from datastore.config import ConfigError, DatastoreSettings
from datastore.dev.local import DynamoDBLocal, LocalDynamoError, running_endpoint
from datastore.dev.npm import NpmError
from datastore.errors import Conflict, InvalidInput, NotFound, Unavailable
from datastore.kinds.bookkeeping import DeletionReceipt
from datastore.kinds.entities import Employee, Organization, OrganizationStatus
from datastore.signin import identities
from datastore.table.pagination import every
from datastore.table.scoped import Table
from datastore.table.store import Datastore
from datastore.tenancy.scope import LayoutScope, LifecycleScope, PlatformScope, SignInScope, TenantScope
from datastore.tenants import employees, organizations, persisted_documents
from datastore.upkeep import layout_version
from datastore.upkeep.provision import ensure_table
from datastore.values import ids, items
from datastore.values.ids import EmployeeId, OrgId
from graphql_api.app import create_app
from graphql_api.auth.tokens import PLATFORM_ROLE, issue_token
from graphql_api.entrypoints.serving import uvicorn_options, worker_options
from graphql_api.entrypoints.supervisor import supervise
from graphql_api.graphiql.assets import ensure_installed
from graphql_api.host import worker_pool
from graphql_api.host.files import remove, remove_orphans, runtime_dir
from graphql_api.limits import shared_buckets
from graphql_api.log_output import configure_logging
from graphql_api.observability import metrics_dir
from graphql_api.observability.metrics import serve_metrics
from graphql_api.schema.executable import schema_sdl
from graphql_api.settings import Settings, hand_down_to_workers

if TYPE_CHECKING:
    from tqdm import tqdm

    from datastore.upkeep import migration
    from graphql_api.schema import evolution

# The tools' own modules (progress bars, the lifecycle commands, the template, the schema's
# evolution) are imported by the commands that use them: `run` starts without them.
SCHEMA_FILE = Path(__file__).resolve().parent / "schema.graphql"

T = TypeVar("T")

log = logging.getLogger("hr.server")
Say = Callable[[str], None]


def say(line: str) -> None:
    """A line of a command's own output, as it is: ``run`` says its start-up lines through the
    log instead under LOG_FORMAT=json, so every line is JSON (``announcer``)."""
    print(line, flush=True)


def announcer(log_format: str) -> tuple[Say, Say]:
    """How ``run`` says a start-up line, and a warning: printed as text, or as log records."""
    if log_format == "json":
        return log.info, log.warning
    return say, lambda line: print(line, file=sys.stderr, flush=True)


class CommandError(Exception):
    """A command cannot do what was asked; the message says why."""


@contextmanager
def dynamodb_endpoint(
    settings: DatastoreSettings, *, reuse: bool = False, notes: TextIO | None = None, say: Say | None = None
) -> Iterator[str | None]:
    """The configured endpoint, else an embedded DynamoDB Local keeping its data on disk.

    With ``reuse``, an embedded engine that a running server already started is used. The line
    saying an engine was started goes to ``notes`` (stdout unless told: a command whose stdout
    is its answer sends it to stderr).
    """
    if not settings.embedded:
        yield settings.endpoint_url
        return
    if reuse and (endpoint := running_endpoint(settings.local_data_dir)) is not None:
        yield endpoint
        return
    local = DynamoDBLocal(settings.local_cache_dir, port=settings.local_port, data_dir=settings.local_data_dir)
    with local:
        line = f"DynamoDB Local on {local.endpoint_url}, data in {settings.local_data_dir}"
        if say is not None:
            say(line)
        else:
            print(line, file=notes or sys.stdout, flush=True)
        yield local.endpoint_url


def _require_free(host: str, port: int, name: str = "PORT") -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            raise CommandError(f"port {port} on {host} is taken; set {name} to a free port") from None


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    """SIGTERM ends the process the way Ctrl-C does: by unwinding, so cleanup runs.

    uvicorn drains in-flight requests on SIGTERM and then raises the signal again; with the
    default handler that would kill the process before the embedded DynamoDB Local is stopped.
    """
    raise SystemExit(128 + signum)


@contextmanager
def metrics_endpoint(host: str, port: int | None, workers: int, say: Say = say) -> Iterator[None]:
    """/metrics on ``host:port`` while the server runs (nothing when ``port`` is None).

    With several workers, each writes its figures to files in a fresh directory
    (prometheus-client's multiprocess mode, which reads ``PROMETHEUS_MULTIPROC_DIR`` when the
    worker imports it; handed down by graphql_api/settings/__init__.py) and this process serves their
    sum. The directory is made empty for each run and removed after: figures from an earlier
    run's processes must not be summed. It is named after this process, so one left by a
    server killed outright is removed at the next start (``remove_leftovers``).
    """
    if port is None:
        yield
        return
    _require_free(host, port, "METRICS_PORT")
    directory = metrics_dir.create() if workers > 1 else None
    hand_down_to_workers(dynamodb_endpoint=None, metrics_dir=directory)
    server = serve_metrics(host, port, directory)
    say(f"metrics on http://{host}:{port}/metrics")
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


def on_event_loop(datastore: Datastore, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """A command's DynamoDB work, awaited on one event loop of its own (``asyncio.run``).

    The loop's connections to DynamoDB are closed before it ends (they belong to it,
    datastore/aws/exchange.py), and the boto3 clients made for the control plane after.
    """

    async def whole() -> T:
        try:
            return await work()
        finally:
            await datastore.aclose()

    try:
        return asyncio.run(whole())
    finally:
        datastore.close()


async def check_layout(datastore: Datastore, *, serve_anyway: bool, say: Say = say, warn: Say | None = None) -> None:
    """Refuse to serve data in another layout than this release's (datastore/upkeep/layout_version.py)."""
    try:
        found = await layout_version.check_at_start(datastore.table(LayoutScope()), serve_anyway=serve_anyway)
    except layout_version.LayoutMismatch as error:
        raise CommandError(str(error)) from None
    if found.stamped:
        say(f"stamped table {datastore.table_name} (empty) with data layout {found.version}")
    if found.warning is not None:
        if warn is None:
            print(found.warning, file=sys.stderr, flush=True)
        else:
            warn(found.warning)


def remove_leftovers(say: Say = say) -> None:
    """What servers killed outright left on this host: metrics directories, shared tenant buckets.

    Only those whose owner is gone (graphql_api/host/files.py); a running server's are kept.
    """
    for path in [
        *metrics_dir.remove_leftovers(),
        *remove_orphans(runtime_dir(), shared_buckets.PREFIX),
        *remove_orphans(runtime_dir(), worker_pool.PREFIX),
    ]:
        say(f"removed {path}, left by a server that was killed")


async def prepare_table(datastore: Datastore, *, serve_anyway: bool, demo_data: bool, say: Say, warn: Say) -> None:
    """Before serving: the table created unless it exists, its layout checked, the demo data
    loaded when asked; on a loop of its own, whose connections are closed here (the app
    serves from uvicorn's loop)."""
    try:
        # The layout is checked before the table's TTL or stream is touched: a table this
        # release refuses to serve is left as it was found.
        layout_checked = functools.partial(check_layout, datastore, serve_anyway=serve_anyway, say=say, warn=warn)
        # The control plane's boto3 client is made only if the table must be created or changed.
        if await ensure_table(lambda: datastore.client, datastore.table(LayoutScope()), before_changes=layout_checked):
            say(f"created table {datastore.table_name}")
        if demo_data:
            from datastore.dev import demo

            if await demo.load(datastore.table(PlatformScope())):
                say("loaded demo data (Acme Corp, Globex Inc)")
    finally:
        await datastore.aclose()


def ready_to_serve(
    datastore: Datastore, where: str, *, serve_anyway: bool, demo_data: bool, say: Say, warn: Say
) -> None:
    """What ``server.py run`` does before it serves: wait until DynamoDB at ``where`` answers,
    then the table prepared (``prepare_table``)."""

    async def ready() -> None:
        waiting = probe.probing(datastore.aio.mirror)
        try:
            await probe.wait_until_answering(
                waiting, announce=lambda: say(f"waiting for DynamoDB at {where}: not reachable yet, retrying")
            )
        finally:
            await waiting.aclose()
        await prepare_table(datastore, serve_anyway=serve_anyway, demo_data=demo_data, say=say, warn=warn)

    asyncio.run(ready())


def run(_args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    loaded = Settings.load()
    settings, api_settings = loaded.datastore, loaded.api
    configure_logging(api_settings.log_format)
    announce, warn = announcer(api_settings.log_format)
    api_settings.hosts_to_serve()  # refused here, before an engine starts, rather than in each worker
    remove_leftovers(announce)
    host, port, workers = loaded.server.host, loaded.server.port, loaded.server.workers
    grace = loaded.server.shutdown_grace_seconds
    _require_free(host, port)
    if api_settings.metrics_port == port:
        raise CommandError("METRICS_PORT must differ from PORT: /metrics is never served on the API's port")
    embedded = settings.embedded
    try:
        with (
            metrics_endpoint(host, api_settings.metrics_port, workers, announce),
            dynamodb_endpoint(settings, say=announce) as endpoint,
        ):
            datastore = Datastore.connect(settings, endpoint)
            where = endpoint or f"AWS ({settings.region})"
            ready_to_serve(
                datastore,
                where,
                serve_anyway=loaded.server.serve_unmigrated,
                demo_data=embedded or loaded.server.demo_data,
                say=announce,
                warn=warn,
            )
            api_settings.warn_if_development(warn)
            if workers > 1 and api_settings.graphiql:
                # GraphiQL's bundles fetched here, once, rather than by every worker at once.
                ensure_installed(api_settings.graphiql_cache_dir)
            announce(f"GraphQL on http://{host}:{port}/graphql ({workers} worker{'s' * (workers > 1)})")
            # Logging as configured above (log_config=None), and no uvicorn access log: ours
            # (graphql_api/observability/access_log.py) writes the one line per request.
            options: dict[str, Any] = {
                "host": host,
                "port": port,
                "log_level": "info",
                "log_config": None,
                "access_log": False,
                "timeout_graceful_shutdown": grace,
            }
            if workers == 1:
                try:
                    app = create_app(datastore, api_settings)
                    settle_heap()
                    uvicorn.run(app, **options, **uvicorn_options(api_settings))
                finally:
                    datastore.close()
            else:
                resume_collecting()  # this process supervises; each worker settles its own heap
                datastore.close()
                # Worker processes load the settings again (graphql_api/entrypoints/asgi.py); they all
                # use this process's engine, which outlives them.
                hand_down_to_workers(dynamodb_endpoint=endpoint, metrics_dir=None)
                # Worker processes are spawned and import the protocol, which each builds from
                # the settings it loads (graphql_api/entrypoints/worker_protocol.py).
                # A spawned worker imports everything before it answers uvicorn's health check:
                # on a loaded machine that takes longer than the default 5 s, and the worker
                # would be killed and respawned forever.
                pool_file = worker_pool.path_of(os.getpid())
                try:
                    supervise(
                        uvicorn.Config(
                            "graphql_api.entrypoints.asgi:app",
                            workers=workers,
                            timeout_worker_healthcheck=30,
                            **options,
                            **worker_options(api_settings),
                        ),
                        pool_file,
                    )
                finally:
                    # The tenant buckets the workers shared (graphql_api/limits/shared_buckets.py).
                    if (table := shared_buckets.table_of(os.getpid())) is not None:
                        remove(table)
                    if pool_file is not None:
                        remove(pool_file)
    except SystemExit as exit_:
        # SIGTERM ended the server (_exit_on_sigterm), and the engine is stopped by now.
        return 0 if exit_.code == 128 + signal.SIGTERM else 1
    except KeyboardInterrupt:  # SIGINT (Ctrl-C), likewise
        return 0
    return 0


def token(args: argparse.Namespace) -> int:
    """Print a bearer token for an employee (by email) or a platform operator.

    Only the token goes to stdout (``TOKEN=$(python server.py token ...)``); every other line,
    the one naming the table it was read from included, goes to stderr: with another data
    folder than the running server's, the token is another table's employee's.
    """
    loaded = Settings.load()
    settings, api_settings = loaded.datastore, loaded.api
    if args.platform is not None:
        print(issue_token(api_settings, subject=args.platform, org_id=None, role=PLATFORM_ROLE))
        return 0
    if args.email is None:
        raise CommandError("give --email EMAIL (an employee) or --platform NAME (an operator)")
    with dynamodb_endpoint(settings, reuse=True, notes=sys.stderr) as endpoint:
        where = endpoint or f"AWS ({settings.region})"
        if settings.embedded:
            where += f", data in {settings.local_data_dir}"
        datastore = Datastore.connect(settings, endpoint)

        async def employee_of(email: str) -> Employee | None:
            identity = await identities.find_identity(datastore.table(SignInScope()), email)
            if identity is None:
                raise CommandError(f"no employee has the email {email} in table {settings.table_name} at {where}")
            return await employees.get_employee(datastore.table(TenantScope(identity.org_id)), identity.emp_id)

        employee = on_event_loop(datastore, lambda: employee_of(args.email))
    if employee is None:
        raise CommandError(f"the employee of {args.email} no longer exists in table {settings.table_name} at {where}")
    print(
        f"token of employee {employee.emp_id} of organisation {employee.org_id} ({employee.role.value}), "
        f"read from table {settings.table_name} at {where}",
        file=sys.stderr,
        flush=True,
    )
    print(issue_token(api_settings, subject=employee.emp_id, org_id=employee.org_id, role=employee.role.value))
    return 0


def import_employees(args: argparse.Namespace) -> int:
    """Import a CSV file of employees into one organisation (README "Bulk onboarding")."""
    from tqdm import tqdm

    from graphql_api.bulk import csv_file as bulk_csv

    settings = Settings.load().datastore
    org = _org_option(args.org)
    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    summary = bulk_csv.Summary()
    with dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)

        size = path.stat().st_size

        async def importing(binary: BinaryIO) -> None:
            [org_id] = [found async for found in _chosen_organizations(datastore, org)]
            table = datastore.table(TenantScope(org_id))
            rows = bulk_csv.records(binary)  # the header is checked before the bar shows
            with tqdm(total=size, unit="B", unit_scale=True, desc="importing", disable=args.quiet) as bar:

                def progress(done: bulk_csv.Summary) -> None:
                    bar.set_postfix(created=done.created, unchanged=done.unchanged, failed=done.failed)
                    bar.update(binary.tell() - bar.n)  # bytes read so far (the csv module reads ahead)

                await bulk_csv.import_records(table, rows, summary, on_batch=progress)

        try:
            with path.open("rb") as binary:
                on_event_loop(datastore, lambda: importing(binary))
        except bulk_csv.CsvError as error:
            if summary.rows:
                print(f"stopped after {summary.rows} rows; those were imported and a re-run finds them UNCHANGED")
            raise CommandError(str(error)) from None
    print(f"{summary.rows} rows: {summary.created} created, {summary.unchanged} unchanged, {summary.failed} failed")
    for failure in summary.failures:
        print(f"  {failure}")
    return 1 if summary.failures else 0


def export_schema(args: argparse.Namespace) -> int:
    sdl = schema_sdl()
    if args.stdout:
        sys.stdout.write(sdl)
    else:
        SCHEMA_FILE.write_text(sdl)
        print(f"wrote {SCHEMA_FILE.name}")
    return 0


def schema_check(args: argparse.Namespace) -> int:
    """Compare the code's schema with an earlier one and check every operation clients send.

    Exit status: 0 when no operation a client sends breaks, 1 when one does (each named with
    graphql-core's reasons), 2 on bad input (docs "Evolving the schema").
    """
    import graphql

    from graphql_api.schema import evolution

    if args.days < 1:
        raise CommandError("--days must be at least 1")
    try:
        sdl, where = evolution.previous_sdl(args.against, SCHEMA_FILE.parent)
        old = evolution.schema_of(sdl, where)
        operations: list[evolution.ClientOperation] = []
        loaded = Settings.load()
        if loaded.api.trusted_documents is not None:
            operations += evolution.manifest_operations(Path(loaded.api.trusted_documents), "trusted")
        if args.documents is not None:
            path = Path(args.documents)
            if not path.exists():
                raise evolution.BadInput(f"--documents: no such file or directory: {path}")
            operations += evolution.manifest_operations(path, "manifest")
    except evolution.BadInput as error:
        raise CommandError(str(error)) from None
    if not args.skip_table:
        operations += _persisted_operations(loaded.datastore, timedelta(days=args.days))
    report = evolution.check(old, graphql.build_schema(schema_sdl()), operations, against=where)
    if args.json:
        sys.stdout.write(evolution.json_report(report))
    else:
        for line in report.lines():
            print(line)
    return 0 if report.ok else 1


def _persisted_operations(settings: DatastoreSettings, days: timedelta) -> list[evolution.ClientOperation]:
    """Each organisation's persisted documents last run (or registered) within ``days``."""
    from graphql_api.schema import evolution

    since = items.now() - days
    found: list[evolution.ClientOperation] = []
    # What the engine prints goes to stderr: stdout is the report (--json).
    with contextlib.redirect_stdout(sys.stderr), dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)
        if not probe.table_ready(datastore.client, settings.table_name):
            datastore.close()
            print(f"no table {settings.table_name}: no persisted documents to check", file=sys.stderr)
            return found

        async def reading() -> None:
            async for org_id in _chosen_organizations(datastore, None):
                async for stored in persisted_documents.list_documents(datastore.table(TenantScope(org_id)), org_id):
                    seen = persisted_documents.registered_at(stored)
                    if seen >= since:
                        found.append(
                            evolution.ClientOperation("persisted", stored.sha256, stored.document, org_id, seen)
                        )

        try:
            on_event_loop(datastore, reading)
        except Unavailable as error:
            raise CommandError(f"cannot read the persisted documents ({error}); --skip-table leaves them out") from None
    return found


def _org_option(org: str | None) -> OrgId | None:
    """``--org`` as an organisation id (a ULID), checked before any DynamoDB is started."""
    if org is None:
        return None
    org_id = ids.parse(OrgId, org)
    if org_id is None:
        raise CommandError(f"--org: {ids.NOT_A_ULID}")
    return org_id


async def _chosen_organizations(datastore: Datastore, org_id: OrgId | None) -> AsyncIterator[OrgId]:
    """The organisations a platform command runs over: ``--org``'s (``_org_option``), if it
    exists (one GetItem), or, without it, every one on the platform (AP14, page by page, as
    the command goes)."""
    if org_id is None:
        platform = datastore.table(PlatformScope())
        async for found in every(lambda request: organizations.list_organizations(platform, request)):
            yield found.org_id
        return
    if await organizations.get_organization(datastore.table(TenantScope(org_id))) is None:
        raise CommandError(f"no organisation has the id {org_id}")
    yield org_id


def check_counts(args: argparse.Namespace) -> int:
    """Recount headcounts and application counts; print each difference; repair with --fix.

    Exit status: 0 when nothing differed (or, with --fix, every difference was repaired),
    1 when a difference was found and --fix not given.
    """
    from datastore.upkeep import counts

    settings = Settings.load().datastore
    org = _org_option(args.org)
    with dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)

        async def checking() -> tuple[int, int, int]:
            found = departments = jobs = 0
            async for org_id in _chosen_organizations(datastore, org):
                report = await counts.check_organization(datastore.table(TenantScope(org_id)), fix=args.fix)
                departments, jobs = departments + report.departments, jobs + report.jobs
                for drift in report.drifts:
                    print(drift.describe(), flush=True)
                found += len(report.drifts)
            return found, departments, jobs

        try:
            found, departments, jobs = on_event_loop(datastore, checking)
        except (InvalidInput, Unavailable) as error:
            raise CommandError(str(error)) from None
    outcome = "repaired" if args.fix else "found"
    print(f"checked {departments} departments and {jobs} jobs: {found} difference{'s' * (found != 1)} {outcome}")
    return 1 if found and not args.fix else 0


def iam_policy(args: argparse.Namespace) -> int:
    """Print the IAM policies of the tenant-data, sign-in, platform and persisted-documents roles."""
    settings = Settings.load().datastore
    table_arn = args.table_arn or f"arn:aws:dynamodb:{settings.region}:*:table/{settings.table_name}"
    documents = policies(table_arn)
    chosen = documents if args.role is None else {args.role: documents[args.role]}
    print(json.dumps(chosen, indent=2))
    return 0


def index_names(args: argparse.Namespace) -> int:
    """Write the name entries of employees written before name search (README "Name search").

    One line per organisation as it is done, so a long run shows its progress and a failed
    one shows how far it got (running it again is safe: it rewrites the same entries).
    """
    from datastore.upkeep import name_backfill

    settings = Settings.load().datastore
    org = _org_option(args.org)
    with dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)

        async def indexing() -> None:
            async for org_id in _chosen_organizations(datastore, org):
                count = await name_backfill.index_organization(datastore.table(TenantScope(org_id)))
                print(f"{org_id}: {count} employee{'s' * (count != 1)} indexed", flush=True)

        try:
            on_event_loop(datastore, indexing)
        except (InvalidInput, Conflict, Unavailable) as error:  # Conflict: an employee kept changing
            raise CommandError(str(error)) from None
    return 0


class _MigrationBar:
    """The migration's progress bar (tqdm, on stderr), shown once there is something to migrate."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.bar: tqdm[Never] | None = None
        self.failed = 0

    def start(self, total: int) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="org", desc="migrating", disable=self.quiet)

    def done(self, outcome: migration.Progress | migration.Failure) -> None:
        from datastore.upkeep import migration

        if self.bar is None:
            return
        if isinstance(outcome, migration.Failure):
            self.failed += 1  # each is described in the summary
            self.bar.set_postfix(failed=self.failed, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def migrate(args: argparse.Namespace) -> int:
    """Bring data written by an earlier release to this release's layout (README "Upgrading").

    Exit status: 0 when the table is at the current layout and nothing needs an operator;
    1 when it is, but an organisation was left without email domains (each named, with why);
    2 when the run could not finish (DynamoDB unreachable, an organisation that kept
    changing, data of a later release): the version is not stamped, and running the command
    again resumes where this run stopped.
    """
    from datastore.upkeep import migration

    settings = Settings.load().datastore
    # Never beside a running engine (reuse=False): a server of the earlier release must be
    # stopped first, or it would keep writing the old layout behind the migration.
    with dynamodb_endpoint(settings) as endpoint:
        datastore = Datastore.connect(settings, endpoint)
        table = datastore.table(LayoutScope())
        bar = _MigrationBar(quiet=args.quiet)
        try:
            summary = on_event_loop(
                datastore,
                lambda: migration.migrate(table, datastore.client, on_start=bar.start, on_organization=bar.done),
            )
        except migration.Refused as error:
            raise CommandError(str(error)) from None
        except (Unavailable, InvalidInput, Conflict) as error:
            raise CommandError(f"{error}; the migration stopped: run it again to finish what is left") from None
        except KeyboardInterrupt:  # asyncio.run cancels the migration and raises it again
            raise CommandError("interrupted; the migration stopped: run it again to finish what is left") from None
        finally:
            bar.close()
    for line in summary.lines():
        print(line, flush=True)
    if summary.failures:
        return 2
    return 1 if summary.needs_operator else 0


def export_organization(args: argparse.Namespace) -> int:
    """Export one organisation to a gzip-compressed JSON Lines file (docs "Data lifecycle").

    Written to FILE.part and renamed once whole, so FILE is only ever a complete export; the
    export is recorded in the organisation's audit trail (as the platform's, no actor).
    """
    from tqdm import tqdm

    from datastore.lifecycle import export, export_format

    settings = Settings.load().datastore
    org_id = _org_option(args.org)
    assert org_id is not None  # --org is required
    path = Path(args.file)
    partial = path.with_name(path.name + ".part")
    started = time.perf_counter()
    with dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)

        async def exporting() -> tuple[export.Export, export_format.EmployeesCsv | None]:
            reader = datastore.table(LifecycleScope(org_id, "export"))
            await export.organization_to_export(reader, org_id)
            with contextlib.ExitStack() as files:
                employees_csv = None
                if args.csv is not None:
                    written = await asyncio.to_thread(Path(args.csv).open, "w")
                    employees_csv = export_format.EmployeesCsv(files.enter_context(written))
                job = export.Export(
                    reader,
                    org_id,
                    source=datastore.table_name,
                    on_record=employees_csv.add if employees_csv is not None else lambda _record: None,
                )
                out = files.enter_context(gzip.open(partial, "wb", compresslevel=export_format.COMPRESSION))
                with tqdm(unit=" items", desc="exporting", disable=args.quiet) as bar:
                    async for line in job.lines():
                        out.write(line)
                        bar.update(job.tally.items - bar.n)
                        if job.tally.items % export.CHECKPOINT_EVERY == 0:
                            job.meter.settle()  # the summary's figures, without a log of every call
            partial.replace(path)
            with calls.metering(job.meter):
                await export.record(datastore.table(TenantScope(org_id)), org_id, job.tally)
            job.meter.settle()
            return job, employees_csv

        try:
            job, employees_csv = on_event_loop(datastore, exporting)
        except NotFound:
            raise CommandError(f"no organisation has the id {org_id}") from None
        except (Conflict, Unavailable, export.UnclassifiedKind) as error:
            partial.unlink(missing_ok=True)
            raise CommandError(str(error)) from None
    seconds = time.perf_counter() - started
    print(
        f"exported {job.tally.items} items of {org_id} to {path} ({path.stat().st_size:,} bytes) in {seconds:.1f} s: "
        f"{job.meter.calls} DynamoDB calls, {job.meter.read_units:.1f} RCU, {job.meter.write_units:.1f} WCU"
        + ("" if employees_csv is None else f"; {employees_csv.rows} employees to {args.csv}")
    )
    return 0


def restore_organization(args: argparse.Namespace) -> int:
    """Replace one organisation's items with those of an export file or another table.

    Exit status: 0 restored; 2 refused (another organisation holds an email or domain of the
    source, a file incomplete or of another organisation, writes that kept landing): the
    message says whether the organisation stays locked (RESTORING: run the command again).
    """
    from tqdm import tqdm

    from datastore.lifecycle import restore

    loaded = Settings.load()
    settings = loaded.datastore
    org_id = _org_option(args.org)
    assert org_id is not None
    if (args.file is None) == (args.from_table is None):
        raise CommandError("give either FILE (an export) or --from-table NAME")
    if args.file is not None and not Path(args.file).is_file():
        raise CommandError(f"no such file: {args.file}")
    drain = args.drain_seconds
    if drain is None:  # a request runs at most its deadline; the client's retries a little more
        drain = loaded.api.request_timeout_seconds + restore.DRAIN_MARGIN_SECONDS
    started = time.perf_counter()
    with dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)
        live = datastore.table(LifecycleScope(org_id, "restore", "operator"))
        source: restore.Source
        if args.file is not None:
            source = restore.FileSource(Path(args.file))
        else:
            other = Table(
                datastore.aio, args.from_table, LifecycleScope(org_id, "restore"), credentials=datastore.credentials
            )
            source = restore.TableSource(other, org_id)
        pause_after = _restore_pause(loaded)
        try:
            with tqdm(unit=" items", desc="restoring", disable=args.quiet) as bar:

                def progress(report: restore.Report) -> None:
                    done = sum(report.written.values()) + sum(report.deleted.values()) + sum(report.unchanged.values())
                    bar.update(done - bar.n)
                    if pause_after is not None and report.partition == pause_after:
                        _hold(f"restore paused after {report.partition}")

                report = on_event_loop(
                    datastore,
                    restore.Restore(live, org_id, source, drain_seconds=drain, on_partition=progress).run,
                )
        except restore.Refused as error:
            raise CommandError(str(error)) from None
        except (Conflict, Unavailable) as error:
            raise CommandError(f"{error}; the organisation may be locked (RESTORING): run the restore again") from None
    for line in report.lines(time.perf_counter() - started):
        print(line)
    return 0


def _restore_pause(loaded: Settings) -> str | None:
    """Tests only: where ``restore`` stops to be killed (HR_TEST_RESTORE_PAUSE_AFTER); never in production."""
    if loaded.api.environment == "production":
        return None
    return loaded.server.restore_pause_after


def _hold(line: str) -> Never:
    print(line, flush=True)
    while True:
        time.sleep(60)


def erase_person(args: argparse.Namespace) -> int:
    """Erase a terminated employee's personal data (docs "Data lifecycle"); --dry-run lists
    every item it would touch and writes nothing."""
    from datastore.lifecycle import erasure

    settings = Settings.load().datastore
    org_id = _org_option(args.org)
    assert org_id is not None
    emp_id = ids.parse(EmployeeId, args.employee)
    if emp_id is None:
        raise CommandError(f"--employee: {ids.NOT_A_ULID}")
    with dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)
        try:
            tenant = datastore.table(TenantScope(org_id))
            done = on_event_loop(datastore, lambda: erasure.erase_person(tenant, emp_id, dry_run=args.dry_run))
        except NotFound:
            raise CommandError(f"organisation {org_id} has no employee {emp_id}") from None
        except (Conflict, Unavailable) as error:
            raise CommandError(str(error)) from None
    if done.already:
        print(f"employee {emp_id} was erased already: nothing to do")
        return 0
    for touch in done.touches:
        if args.dry_run:
            print(touch.describe())
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(done.by_kind().items()))
    verb = "would touch" if args.dry_run else "erased: touched"
    print(f"employee {emp_id} {verb} {len(done.touches)} items ({kinds})")
    return 0


def offboard(args: argparse.Namespace) -> int:
    """Close an organisation and, once its grace period is over, delete all its data.

    Closes it (unless closed already) with the grace period of OFFBOARDING_GRACE_DAYS (or
    --grace-days); when the period is over, deletes every item with a progress bar and
    prints the deletion receipt. Run it again after the period, or after a failure: it
    resumes. A run that would close and delete at once (--grace-days 0) asks first, or wants
    --yes. An organisation deleted and then restored is offboarded anew, with a receipt of
    its own. --receipt only prints the receipt. Exit status: 0 done (or closed and waiting,
    or deleted already), 2 refused.
    """
    from tqdm import tqdm

    from datastore.lifecycle import offboarding

    loaded = Settings.load()
    settings = loaded.datastore
    org_id = _org_option(args.org)
    assert org_id is not None
    grace_days = loaded.api.offboarding_grace_days if args.grace_days is None else args.grace_days
    with dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)
        table = datastore.table(LifecycleScope(org_id, "offboard", "operator"))

        async def offboarding_run() -> tuple[DeletionReceipt, float] | None:
            """The receipt of the deletion this run finished and how long it took; None when
            there was nothing to delete now (what was found is printed)."""
            receipt = await offboarding.receipt_of(table, org_id)
            if args.receipt:
                if receipt is None:
                    raise CommandError(f"organisation {org_id} has no deletion receipt: it was never closed")
                print("\n".join(offboarding.describe(receipt)))
                return None
            organization = await offboarding.organization_of(table, org_id)
            if organization is None and receipt is not None and receipt.finished_at is not None:
                print(f"organisation {org_id} was deleted already; nothing to do. Its receipt:")
                print("\n".join(offboarding.describe(receipt)))
                return None
            # No offboarding under way: this run starts one (with a receipt of its own).
            starts = receipt is None or receipt.finished_at is not None
            if organization is not None and (organization.status is not OrganizationStatus.CLOSING or starts):
                if grace_days <= 0:
                    _confirm_deletion(args, organization)
                receipt = (await offboarding.close(table, org_id, grace=timedelta(days=grace_days))).receipt
            elif receipt is None:
                raise NotFound(Organization, org_id)
            assert receipt is not None
            if items.now() < receipt.delete_after:
                print(
                    f"organisation {org_id} is CLOSING: its data is deleted after "
                    f"{items.timestamp(receipt.delete_after)}; run this command again then"
                )
                return None
            with tqdm(unit=" items", desc="deleting", disable=args.quiet) as bar:

                def progress(done: offboarding.Progress) -> None:
                    bar.total = done.counted
                    bar.update(done.deleted - bar.n)

                started = time.perf_counter()
                receipt = await offboarding.delete(table, org_id, on_progress=progress)
            return receipt, time.perf_counter() - started

        try:
            deleted = on_event_loop(datastore, offboarding_run)
        except NotFound:
            raise CommandError(f"no organisation has the id {org_id}") from None
        except (offboarding.NotYet, Conflict, Unavailable) as error:
            raise CommandError(str(error)) from None
    if deleted is None:
        return 0
    receipt, seconds = deleted
    print("\n".join(offboarding.describe(receipt)))
    print(f"deleted in {seconds:.1f} s")
    return 0


def _confirm_deletion(args: argparse.Namespace, organization: Organization) -> None:
    """Closing with no grace period deletes at once: the operator types the id, or gave --yes."""
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise CommandError(
            f"--grace-days 0 deletes organisation {organization.org_id} ({organization.name}) and all its data at "
            "once: add --yes to confirm; nothing was done"
        )
    answer = input(
        f"Delete organisation {organization.org_id} ({organization.name}) and all its data now? Type its id: "
    )
    if answer.strip() != organization.org_id:
        raise CommandError("not confirmed; nothing was done")


def cloudformation(_args: argparse.Namespace) -> int:
    """Print the CloudFormation template (README "Deploying to AWS")."""
    from deploy import cloudformation as deploy_template

    sys.stdout.write(deploy_template.render())
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": run,
    "token": token,
    "import": import_employees,
    "export-schema": export_schema,
    "schema-check": schema_check,
    "check-counts": check_counts,
    "iam-policy": iam_policy,
    "cloudformation": cloudformation,
    "index-names": index_names,
    "migrate": migrate,
    "export": export_organization,
    "restore": restore_organization,
    "erase": erase_person,
    "offboard": offboard,
}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="server.py", description=__doc__)
    commands = root.add_subparsers(dest="command")
    commands.add_parser("run", help="serve the API (the default)")
    token_parser = commands.add_parser("token", help="print a development bearer token")
    token_parser.add_argument("--email", help="the employee to sign in as")
    token_parser.add_argument("--platform", metavar="NAME", help="a platform operator instead")
    importing = commands.add_parser("import", help="import employees from a CSV file (exit 1 if a row failed)")
    importing.add_argument("--org", required=True, help="the organisation's id")
    importing.add_argument("file", help='the CSV file (README "Bulk onboarding" lists its columns)')
    importing.add_argument("--quiet", action="store_true", help="no progress bar")
    schema_export = commands.add_parser("export-schema", help="write schema.graphql from the code")
    schema_export.add_argument("--stdout", action="store_true", help="print it instead")
    checking_schema = commands.add_parser(
        "schema-check",
        help="compare the code's schema with an earlier one and check every operation clients send "
        "(exit 1: one breaks; 2: bad input)",
    )
    checking_schema.add_argument(
        "--against", default="HEAD", metavar="FILE|GIT_REF", help="the earlier schema (default: schema.graphql at HEAD)"
    )
    checking_schema.add_argument(
        "--documents", metavar="DIR_OR_MANIFEST", help="also a manifest ({id: document}) or a directory of .graphql"
    )
    checking_schema.add_argument(
        "--days", type=int, default=30, help="persisted documents run within this many days (default 30)"
    )
    checking_schema.add_argument(
        "--skip-table", action="store_true", help="leave out the table's persisted documents (no DynamoDB)"
    )
    checking_schema.add_argument("--json", action="store_true", help="the report as JSON")
    check = commands.add_parser(
        "check-counts",
        help="recount headcounts and application counts; exit 1 if any differs (0 with --fix once repaired)",
    )
    check.add_argument("--org", metavar="ID", help="one organisation only (default: every organisation)")
    check.add_argument("--fix", action="store_true", help="repair each difference with a conditional write")
    iam = commands.add_parser("iam-policy", help="print the IAM policies bounding each role's keys")
    iam.add_argument("--table-arn", help="the table's ARN (default: from HR_TABLE_NAME and AWS_REGION)")
    iam.add_argument("--role", choices=ROLES, help="one role only")
    commands.add_parser("cloudformation", help="print the CloudFormation template of the service")
    names = commands.add_parser("index-names", help="write name entries for employees written before name search")
    names.add_argument("--org", help="one organisation's id only (default: every organisation)")
    migrating = commands.add_parser(
        "migrate",
        help="bring data written by an earlier release to this release's layout (exit 1: an organisation "
        "needs an operator; 2: not finished, run it again)",
    )
    migrating.add_argument("--quiet", action="store_true", help="no progress bar")
    exporting = commands.add_parser(
        "export", help="export one organisation to a gzip-compressed JSON Lines file (docs: Data lifecycle)"
    )
    exporting.add_argument("--org", required=True, help="the organisation's id")
    exporting.add_argument("file", help="the file to write (.jsonl.gz)")
    exporting.add_argument("--csv", metavar="FILE", help="also write its employees as CSV (formulas neutralised)")
    exporting.add_argument("--quiet", action="store_true", help="no progress bar")
    restoring = commands.add_parser(
        "restore",
        help="replace one organisation's items with an export's or another table's, locking it meanwhile "
        "(exit 2: refused)",
    )
    restoring.add_argument("--org", required=True, help="the organisation's id")
    restoring.add_argument("file", nargs="?", help="an export file (server.py export, GET /export)")
    restoring.add_argument("--from-table", metavar="NAME", help="restore from this table instead (a PITR restore)")
    restoring.add_argument(
        "--drain-seconds",
        type=float,
        help="how long to wait after locking for writes in flight (default: REQUEST_TIMEOUT_SECONDS + 5)",
    )
    restoring.add_argument("--quiet", action="store_true", help="no progress bar")
    erasing = commands.add_parser("erase", help="erase a terminated employee's personal data everywhere it is stored")
    erasing.add_argument("--org", required=True, help="the organisation's id")
    erasing.add_argument("--employee", required=True, help="the employee's id (a ULID)")
    erasing.add_argument("--dry-run", action="store_true", help="list every item it would touch; write nothing")
    offboarding_parser = commands.add_parser(
        "offboard", help="close an organisation, and once its grace period is over delete all its data"
    )
    offboarding_parser.add_argument("--org", required=True, help="the organisation's id")
    offboarding_parser.add_argument(
        "--grace-days",
        type=int,
        help="days before its data is deleted, when closing it (default: OFFBOARDING_GRACE_DAYS)",
    )
    offboarding_parser.add_argument(
        "--yes", action="store_true", help="confirm a deletion at once (--grace-days 0) without asking"
    )
    offboarding_parser.add_argument("--receipt", action="store_true", help="only print its deletion receipt")
    offboarding_parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    command = args.command or "run"
    if command != "run":
        resume_collecting()  # a command serves nothing: its heap is never settled
    try:
        return COMMANDS[command](args)
    except (CommandError, LocalDynamoError, NpmError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

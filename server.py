"""Entry point: ``python server.py [run]`` serves the API; the other commands are tools."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from datastore import demo, employees, identities, probe
from datastore.config import ConfigError, DatastoreSettings, env_int
from datastore.iam import ROLES, policies
from datastore.local import DynamoDBLocal, LocalDynamoError, running_endpoint
from datastore.provision import ensure_table
from datastore.scope import PlatformScope, SignInScope, TenantScope
from datastore.store import Datastore
from deploy import cloudformation as deploy_template
from graphql_api.app import create_app
from graphql_api.auth import PLATFORM_ROLE, issue_token
from graphql_api.config import ApiSettings
from graphql_api.schema import schema_sdl

SCHEMA_FILE = Path(__file__).resolve().parent / "schema.graphql"


class CommandError(Exception):
    """A command cannot do what was asked; the message says why."""


@contextmanager
def dynamodb_endpoint(settings: DatastoreSettings, *, reuse: bool = False) -> Iterator[str | None]:
    """The configured endpoint, else an embedded DynamoDB Local keeping its data on disk.

    With ``reuse``, an embedded engine that a running server already started is used.
    """
    if not settings.embedded:
        yield settings.endpoint_url
        return
    if reuse and (endpoint := running_endpoint(settings.local_data_dir)) is not None:
        yield endpoint
        return
    local = DynamoDBLocal(settings.local_cache_dir, port=settings.local_port, data_dir=settings.local_data_dir)
    with local:
        print(f"DynamoDB Local on {local.endpoint_url}, data in {settings.local_data_dir}", flush=True)
        yield local.endpoint_url


def _require_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            raise CommandError(f"port {port} on {host} is taken; set PORT to a free port") from None


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    """SIGTERM ends the process the way Ctrl-C does: by unwinding, so cleanup runs.

    uvicorn drains in-flight requests on SIGTERM and then raises the signal again; with the
    default handler that would kill the process before the embedded DynamoDB Local is stopped.
    """
    raise SystemExit(128 + signum)


def run(_args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    settings = DatastoreSettings.from_env()
    api_settings = ApiSettings.from_env()
    host = os.environ.get("HOST", "127.0.0.1")
    port = env_int(os.environ, "PORT", 8000)
    workers = env_int(os.environ, "WORKERS", 1)
    grace = env_int(os.environ, "SHUTDOWN_GRACE_SECONDS", 10, minimum=0)
    _require_free(host, port)
    embedded = settings.embedded
    try:
        with dynamodb_endpoint(settings) as endpoint:
            datastore = Datastore.connect(settings, endpoint)
            where = endpoint or f"AWS ({settings.region})"
            probe.wait_until_answering(
                probe.probe_client(datastore.client),
                announce=lambda: print(f"waiting for DynamoDB at {where}: not reachable yet, retrying", flush=True),
            )
            if ensure_table(datastore.client, settings.table_name):
                print(f"created table {settings.table_name}", flush=True)
            if (embedded or os.environ.get("HR_DEMO_DATA") == "1") and demo.load(datastore.table(PlatformScope())):
                print("loaded demo data (Acme Corp, Globex Inc)", flush=True)
            api_settings.warn_if_development()
            print(f"GraphQL on http://{host}:{port}/graphql ({workers} worker{'s' * (workers > 1)})", flush=True)
            serve = functools.partial(
                uvicorn.run, host=host, port=port, log_level="info", timeout_graceful_shutdown=grace
            )
            if workers == 1:
                try:
                    serve(create_app(datastore, api_settings))
                finally:
                    datastore.close()
            else:
                datastore.close()
                # Worker processes build the app from the environment (graphql_api/asgi.py);
                # they all use this process's engine, which outlives them.
                if endpoint is not None:
                    os.environ["DYNAMODB_ENDPOINT"] = endpoint
                serve("graphql_api.asgi:app", workers=workers)
    except SystemExit as exit_:
        # A signal ended the server, and the engine is stopped by now: a requested stop.
        return 0 if exit_.code in (128 + signal.SIGTERM, 128 + signal.SIGINT) else 1
    except KeyboardInterrupt:
        return 0
    return 0


def token(args: argparse.Namespace) -> int:
    """Print a bearer token for an employee (by email) or a platform operator."""
    settings = DatastoreSettings.from_env()
    api_settings = ApiSettings.from_env()
    if args.platform is not None:
        print(issue_token(api_settings, subject=args.platform, org_id=None, role=PLATFORM_ROLE))
        return 0
    if args.email is None:
        raise CommandError("give --email EMAIL (an employee) or --platform NAME (an operator)")
    with dynamodb_endpoint(settings, reuse=True) as endpoint:
        datastore = Datastore.connect(settings, endpoint)
        identity = identities.find_identity(datastore.table(SignInScope()), args.email)
        if identity is None:
            raise CommandError(f"no employee has the email {args.email}")
        employee = employees.get_employee(datastore.table(TenantScope(identity.org_id)), identity.emp_id)
        datastore.close()
    if employee is None:
        raise CommandError(f"the employee of {args.email} no longer exists")
    print(issue_token(api_settings, subject=employee.emp_id, org_id=employee.org_id, role=employee.role.value))
    return 0


def export_schema(args: argparse.Namespace) -> int:
    sdl = schema_sdl()
    if args.stdout:
        sys.stdout.write(sdl)
    else:
        SCHEMA_FILE.write_text(sdl)
        print(f"wrote {SCHEMA_FILE.name}")
    return 0


def iam_policy(args: argparse.Namespace) -> int:
    """Print the IAM policies of the data, sign-in and platform roles (README "Tenant isolation")."""
    settings = DatastoreSettings.from_env()
    table_arn = args.table_arn or f"arn:aws:dynamodb:{settings.region}:*:table/{settings.table_name}"
    documents = policies(table_arn)
    chosen = documents if args.role is None else {args.role: documents[args.role]}
    print(json.dumps(chosen, indent=2))
    return 0


def cloudformation(_args: argparse.Namespace) -> int:
    """Print the CloudFormation template (README "Deploying to AWS")."""
    sys.stdout.write(deploy_template.render())
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": run,
    "token": token,
    "export-schema": export_schema,
    "iam-policy": iam_policy,
    "cloudformation": cloudformation,
}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="server.py", description=__doc__)
    commands = root.add_subparsers(dest="command")
    commands.add_parser("run", help="serve the API (the default)")
    token_parser = commands.add_parser("token", help="print a development bearer token")
    token_parser.add_argument("--email", help="the employee to sign in as")
    token_parser.add_argument("--platform", metavar="NAME", help="a platform operator instead")
    export = commands.add_parser("export-schema", help="write schema.graphql from the code")
    export.add_argument("--stdout", action="store_true", help="print it instead")
    iam = commands.add_parser("iam-policy", help="print the IAM policies bounding each role's keys")
    iam.add_argument("--table-arn", help="the table's ARN (default: from HR_TABLE_NAME and AWS_REGION)")
    iam.add_argument("--role", choices=ROLES, help="one role only")
    commands.add_parser("cloudformation", help="print the CloudFormation template of the service")
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command or "run"](args)
    except (CommandError, LocalDynamoError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

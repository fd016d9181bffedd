"""Entry point: ``python server.py [run]`` serves the API; the other commands are tools."""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from datastore import demo, employees, identities
from datastore.config import ConfigError, DatastoreSettings, env_int
from datastore.local import DynamoDBLocal, LocalDynamoError, running_endpoint
from datastore.provision import ensure_table
from datastore.scope import PlatformScope, SignInScope, TenantScope
from datastore.store import Datastore
from graphql_api.app import create_app
from graphql_api.auth import PLATFORM_ROLE, issue_token
from graphql_api.config import ApiSettings
from graphql_api.iam import policies
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


def run(_args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = DatastoreSettings.from_env()
    api_settings = ApiSettings.from_env()
    host = os.environ.get("HOST", "127.0.0.1")
    port = env_int(os.environ, "PORT", 8000)
    _require_free(host, port)
    embedded = settings.embedded
    with dynamodb_endpoint(settings) as endpoint:
        datastore = Datastore.connect(settings, endpoint)
        if ensure_table(datastore.client, settings.table_name):
            print(f"created table {settings.table_name}", flush=True)
        if (embedded or os.environ.get("HR_DEMO_DATA") == "1") and demo.load(datastore.table(PlatformScope())):
            print("loaded demo data (Acme Corp, Globex Inc)", flush=True)
        api_settings.warn_if_development()
        print(f"GraphQL on http://{host}:{port}/graphql", flush=True)
        try:
            uvicorn.run(create_app(datastore, api_settings), host=host, port=port, log_level="info")
        finally:
            datastore.close()
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": run,
    "token": token,
    "export-schema": export_schema,
    "iam-policy": iam_policy,
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
    iam.add_argument("--role", choices=["TenantData", "SignIn", "Platform", "PersistedDocuments"], help="one role only")
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

"""Entry point: ``python server.py [run]`` serves the API; other commands are tools."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn

from datastore import demo
from datastore.config import ConfigError, DatastoreSettings, env_int
from datastore.local import DynamoDBLocal, LocalDynamoError
from datastore.provision import ensure_table
from datastore.scope import PlatformScope
from datastore.store import Datastore
from graphql_api.app import create_app


@contextmanager
def dynamodb_endpoint(settings: DatastoreSettings) -> Iterator[str | None]:
    """The configured endpoint, or an embedded DynamoDB Local that keeps its data on disk."""
    if settings.endpoint_url is not None:
        yield settings.endpoint_url
        return
    local = DynamoDBLocal(
        settings.local_cache_dir, port=settings.local_port, data_dir=settings.local_data_dir
    )
    with local:
        print(f"DynamoDB Local on {local.endpoint_url}, data in {settings.local_data_dir}", flush=True)
        yield local.endpoint_url


def _require_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            raise LocalDynamoError(f"port {port} on {host} is taken; set PORT to a free port") from None


def run(_args: argparse.Namespace) -> int:
    settings = DatastoreSettings.from_env()
    host = os.environ.get("HOST", "127.0.0.1")
    port = env_int(os.environ, "PORT", 8000)
    _require_free(host, port)
    embedded = settings.endpoint_url is None
    with dynamodb_endpoint(settings) as endpoint:
        datastore = Datastore.connect(settings, endpoint)
        if ensure_table(datastore.client, settings.table_name):
            print(f"created table {settings.table_name}", flush=True)
        if (embedded or os.environ.get("HR_DEMO_DATA") == "1") and demo.load(
            datastore.table(PlatformScope())
        ):
            print("loaded demo data (Acme Corp, Globex Inc)", flush=True)
        try:
            uvicorn.run(create_app(datastore), host=host, port=port, log_level="info")
        finally:
            datastore.close()
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"run": run}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="server.py", description=__doc__)
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("run", help="serve the API (the default)")
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command or "run"](args)
    except (LocalDynamoError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

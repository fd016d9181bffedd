"""A local engine (``datastore.config.local_engine``: DynamoDB Local, moto, LocalStack) is signed
by both planes with one key, the environment's or a placeholder, and never sends a process to
botocore's credential chain (a profile's key is not used for it, and botocore is not imported).

Each case runs in a fresh interpreter with only the AWS variables it names, against a real HTTP
server on loopback that records the key id each request is signed with and refuses the call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from datastore.config import local_engine
from tests.server_commands import ROOT


@pytest.mark.parametrize(
    ("endpoint", "local"),
    [
        ("http://127.0.0.1:8000", True),
        ("http://localhost:4566", True),
        ("http://dynamodb-local:8000", True),  # a compose service's name
        ("https://localhost:8000", False),  # HTTPS: a proxy in front of DynamoDB, say
        ("http://dynamodb.eu-west-1.amazonaws.com", False),
        ("https://dynamodb.eu-west-1.amazonaws.com", False),
        ("http://DYNAMODB.CN-NORTH-1.AMAZONAWS.COM.CN", False),
        ("http://dynamodb.eu-west-1.api.aws", False),
        (None, False),  # AWS's regional endpoint
    ],
)
def test_local_engine__plain_http_outside_aws(endpoint: str | None, local: bool) -> None:
    assert local_engine(endpoint) is local


# A server that records the key id of each signed request and refuses it as DynamoDB would; then
# one call from the control plane's boto3 client and one from the data plane's, both refused.
BOTH_PLANES_CHILD = """
import asyncio, json, re, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

signed = []

class Refuse(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        signed.append(re.search(r"Credential=([^/]+)/", self.headers["Authorization"]).group(1))
        body = b'{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"refused"}'
        self.send_response(400)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
threading.Thread(target=server.serve_forever, daemon=True).start()
endpoint = f"http://127.0.0.1:{server.server_address[1]}"

from datastore.aws.client import AsyncDynamo, Mirror
from datastore.config import DatastoreSettings
from graphql_api.settings import process_environment

settings = DatastoreSettings.from_env({**process_environment(), "DYNAMODB_ENDPOINT": endpoint})

async def data_plane():
    client = AsyncDynamo.of(Mirror.of(settings)).client()
    try:
        await client.table_exists("t")
    except Exception:
        pass

asyncio.run(data_plane())
botocore_imported = "botocore" in sys.modules

from datastore.aws.control_plane import make_client
try:
    make_client(settings).describe_table(TableName="t")
except Exception:
    pass
print(json.dumps({"data_plane": signed[0], "control_plane": signed[1], "botocore_imported": botocore_imported}))
"""


def both_planes(credentials: dict[str, str]) -> dict[str, Any]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("AWS_", "DYNAMODB_"))}
    env.update({"AWS_CONFIG_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true", **credentials})
    result = subprocess.run(
        [sys.executable, "-c", BOTH_PLANES_CHILD], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_local_engine__a_profiles_key__both_planes_sign_with_the_placeholder(tmp_path: Path) -> None:
    """botocore's chain would find the default profile's key; neither plane asks it."""
    shared = tmp_path / "credentials"
    shared.write_text("[default]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = secret\n")

    signed = both_planes({"AWS_SHARED_CREDENTIALS_FILE": str(shared)})

    assert signed == {"data_plane": "local", "control_plane": "local", "botocore_imported": False}


def test_local_engine__the_environments_key__both_planes_sign_with_it(tmp_path: Path) -> None:
    shared = tmp_path / "credentials"
    shared.write_text("[default]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = secret\n")

    signed = both_planes(
        {
            "AWS_SHARED_CREDENTIALS_FILE": str(shared),
            "AWS_ACCESS_KEY_ID": "AKIAENV",
            "AWS_SECRET_ACCESS_KEY": "secret",
            "AWS_SESSION_TOKEN": "session",
        }
    )

    assert signed == {"data_plane": "AKIAENV", "control_plane": "AKIAENV", "botocore_imported": False}

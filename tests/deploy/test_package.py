"""``make package``: the zip Lambda runs imports and answers with nothing but its own contents."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deploy import cloudformation, package
from tests.bytecode import compiled_from_source, loaded_from_bytecode

# Run inside the unpacked zip with -S (no site-packages: only the zip's contents importable).
# `{ __typename }` reads no data; the import (Lambda's init) reads the table's layout version
# (graphql_api/entrypoints/asgi.py), from the session's DynamoDB Local.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import graphql_api.entrypoints.lambda_handler as entry
event = json.loads(sys.argv[2])
response = entry.handler(event, None)
print(json.dumps({"status": response["statusCode"], "body": response["body"], "path": entry.__file__}))
"""
# The live updates' functions (graphql_api/entrypoints/lambda_live.py) from the same zip: a
# browser's $connect (no credential yet: opened, the protocol agreed) and an empty stream batch.
LIVE_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import graphql_api.entrypoints.lambda_live as live
connect = json.loads(sys.argv[2])
answers = {"connect": live.connection_handler(connect, None)}
answers["stream"] = live.stream_handler({"Records": []}, None)
print(json.dumps(answers))
"""
CONNECT_EVENT = {
    "headers": {
        "Host": "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com",
        "Sec-WebSocket-Protocol": "graphql-transport-ws",
    },
    "requestContext": {
        "routeKey": "$connect",
        "eventType": "CONNECT",
        "stage": "live",
        "domainName": "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com",
        "connectionId": "probe1",
        "apiId": "a1b2c3d4e5",
        "requestId": "probe",
    },
    "isBase64Encoded": False,
}


@dataclass(frozen=True, slots=True)
class Unpacked:
    names: list[str]  # the zip's entries
    root: Path  # where it is unpacked, as Lambda unpacks it into /var/task


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Unpacked]:
    """``make package``'s zip, built once for the module's tests and unpacked."""
    scratch = tmp_path_factory.mktemp("package")
    with zipfile.ZipFile(package.build(scratch / "lambda.zip")) as archive:
        names = archive.namelist()
        archive.extractall(scratch / "unpacked")
    yield Unpacked(names, scratch / "unpacked")


def probe_env(dynamodb_endpoint: str, table_name: str) -> dict[str, str]:
    """A production function's environment, on the session's DynamoDB Local; no .pyc is
    written (Lambda's /var/task is read-only), so what the zip lacks is compiled every time."""
    return {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": table_name,
        "AWS_REGION": "eu-west-1",
        "HR_ENV": "production",
        "ALLOWED_HOSTS": "*",
        "JWT_SECRET": "package-test-secret-0123456789-abcdefgh",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def graphql_event() -> dict[str, object]:
    """API Gateway's (payload 2.0) POST of ``{ __typename }``, which reads no data."""
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/graphql",
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "host": "api.example.com"},
        "requestContext": {
            "http": {"method": "POST", "path": "/graphql", "protocol": "HTTP/1.1", "sourceIp": "203.0.113.9"},
            "requestId": "probe",
            "stage": "$default",
        },
        "body": json.dumps({"query": "{ __typename }"}),
        "isBase64Encoded": False,
    }


def test_package__unpacked_zip__imports_and_answers_graphql(
    unpacked: Unpacked, tmp_path: Path, dynamodb_endpoint: str, table_name: str
) -> None:
    names = unpacked.names
    assert "graphql_api/entrypoints/lambda_handler.py" in names
    assert "graphql_api/entrypoints/lambda_live.py" in names
    assert "graphql_api/subscriptions/gateway.py" in names
    assert "mangum/__init__.py" in names
    # The data plane's client sends through its own connections (datastore/aws/exchange.py), no libcurl.
    assert not any(name.startswith("pycurl") for name in names)
    env = probe_env(dynamodb_endpoint, table_name)
    result = subprocess.run(
        [sys.executable, "-S", "-c", PROBE, str(unpacked.root), json.dumps(graphql_event())],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["path"].startswith(str(unpacked.root))
    assert answer["status"] == 200
    assert json.loads(answer["body"])["data"] == {"__typename": "Query"}
    live = subprocess.run(
        [sys.executable, "-S", "-c", LIVE_PROBE, str(unpacked.root), json.dumps(CONNECT_EVENT)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert live.returncode == 0, live.stderr
    answered = json.loads(live.stdout.strip().splitlines()[-1])
    assert answered["connect"] == {"statusCode": 200, "headers": {"Sec-WebSocket-Protocol": "graphql-transport-ws"}}
    assert answered["stream"] == {"organisations": 0, "delivered": 0}


def test_package__every_module__its_unchecked_hash_bytecode_beside_it(unpacked: Unpacked) -> None:
    """Each .py the zip ships has its .pyc for the runtime's Python, and every .pyc is an
    unchecked-hash one (PEP 552's flags word: 0b01), which Python loads whatever the unpacked
    source's mtime: none is a timestamp .pyc of a working tree's, nor of another Python's."""
    tag = sys.implementation.cache_tag
    sources = [name for name in unpacked.names if name.endswith(".py")]
    expected = {re.sub(r"([^/]+)\.py$", rf"__pycache__/\1.{tag}.pyc", name) for name in sources}
    shipped = {name for name in unpacked.names if name.endswith(".pyc")}
    assert sources and sorted(expected - shipped) == []
    assert sorted(shipped - expected) == []
    for name in sorted(shipped):
        header = (unpacked.root / name).read_bytes()[:8]
        assert header[:4] == importlib.util.MAGIC_NUMBER, name
        assert int.from_bytes(header[4:8], "little") == 0b01, name


def test_package__handlers_import_and_answer__no_module_compiled_from_source(
    unpacked: Unpacked, tmp_path: Path, dynamodb_endpoint: str, table_name: str
) -> None:
    """A cold start's imports, and a first request's, load every module of the zip from its
    .pyc: ``python -v`` names each module it compiles from source, and none is the zip's."""
    env = probe_env(dynamodb_endpoint, table_name)
    for probe, event, entry in (
        (PROBE, graphql_event(), "graphql_api/entrypoints/lambda_handler.py"),
        (LIVE_PROBE, CONNECT_EVENT, "graphql_api/entrypoints/lambda_live.py"),
    ):
        result = subprocess.run(
            [sys.executable, "-S", "-v", "-c", probe, str(unpacked.root), json.dumps(event)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert compiled_from_source(result.stderr, unpacked.root) == []
        loaded = loaded_from_bytecode(result.stderr, unpacked.root)
        # Not a run that imported nothing from the zip: the entry point and its imports came from bytecode.
        assert str(unpacked.root / entry) in loaded
        assert len(loaded) > 100, len(loaded)


def test_botocore_services__every_client_the_code_makes__its_model_kept_in_the_zip() -> None:
    """The zip keeps botocore's models of ``BOTOCORE_SERVICES`` alone: every service the product
    makes a client of (``boto3.client("sqs")``, ``local_client("dynamodb", ...)``, spelt as a
    string literal where the client is made) must be among them, or that client fails on AWS."""
    made: set[str] = set()
    for source in sorted((package.ROOT / "datastore").rglob("*.py")) + sorted(
        (package.ROOT / "graphql_api").rglob("*.py")
    ):
        made.update(re.findall(r'(?:boto3|session|local_client)\.?\w*\(\s*"([a-z0-9-]+)"', source.read_text()))
    assert made and made <= package.BOTOCORE_SERVICES, sorted(made - package.BOTOCORE_SERVICES)


def test_python_version__the_functions_runtime() -> None:
    """The wheels and the bytecode are the runtime's: the template's Python is the package's."""
    assert f"python{package.PYTHON_VERSION}" == cloudformation.RUNTIME

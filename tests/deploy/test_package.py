"""``make package``: the zip Lambda runs imports and answers with nothing but its own contents."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from deploy import package

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


def test_package__unpacked_zip__imports_and_answers_graphql(
    tmp_path: Path, dynamodb_endpoint: str, table_name: str
) -> None:
    zip_path = package.build(tmp_path / "lambda.zip")
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "unpacked")
    assert "graphql_api/entrypoints/lambda_handler.py" in names
    assert "graphql_api/entrypoints/lambda_live.py" in names
    assert "graphql_api/subscriptions/gateway.py" in names
    assert "mangum/__init__.py" in names
    assert not any("__pycache__" in name for name in names)
    # The data plane's client sends through its own connections (datastore/aws/exchange.py), no libcurl.
    assert not any(name.startswith("pycurl") for name in names)
    event = {
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
    env = {
        "DYNAMODB_ENDPOINT": dynamodb_endpoint,
        "HR_TABLE_NAME": table_name,
        "AWS_REGION": "eu-west-1",
        "HR_ENV": "production",
        "ALLOWED_HOSTS": "*",
        "JWT_SECRET": "package-test-secret-0123456789-abcdefgh",
    }
    result = subprocess.run(
        [sys.executable, "-S", "-c", PROBE, str(tmp_path / "unpacked"), json.dumps(event)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["path"].startswith(str(tmp_path / "unpacked"))
    assert answer["status"] == 200
    assert json.loads(answer["body"])["data"] == {"__typename": "Query"}
    live = subprocess.run(
        [sys.executable, "-S", "-c", LIVE_PROBE, str(tmp_path / "unpacked"), json.dumps(CONNECT_EVENT)],
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

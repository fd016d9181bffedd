"""The Lambda entry point, given real API Gateway (HTTP API, payload 2.0) events, in process.

The module is imported as Lambda imports it, configured only by the environment, against the
session's DynamoDB Local.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import gzip
import importlib
import json
import logging
import sys
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from aiodynamo.http.types import Request

from datastore.aws import calls
from datastore.aws.client import AsyncDynamo
from datastore.kinds.entities import Employee, Role
from datastore.signin import api_keys
from datastore.table.scoped import Table
from datastore.tenancy.scope import TenantScope
from graphql_api.auth.signin import GRANT_TYPE, ID_TOKEN_TYPE
from graphql_api.auth.tokens import issue_token
from graphql_api.entrypoints import heap
from graphql_api.settings.api import ApiSettings
from tests.blocking import run
from tests.datastore import faults
from tests.graphql_api import idp
from tests.graphql_api.fixtures import TEST_SECRET, Demo
from tests.graphql_api.observability.logs import captured_lines
from tests.graphql_api.observability.test_access_log import docs_directory_query

ENTRY_MODULES = ("graphql_api.entrypoints.lambda_handler", "graphql_api.entrypoints.asgi")


@pytest.fixture
def entry(
    monkeypatch: pytest.MonkeyPatch, dynamodb_endpoint: str, table_name: str, demo: Demo, tmp_path: Path
) -> Iterator[ModuleType]:
    """The entry module, configured the way the CloudFormation template configures the function."""
    monkeypatch.setenv("JWT_SECRET", TEST_SECRET)
    with imported_entry(monkeypatch, dynamodb_endpoint, table_name, tmp_path) as module:
        yield module


@contextmanager
def imported_entry(
    monkeypatch: pytest.MonkeyPatch, dynamodb_endpoint: str, table_name: str, tmp_path: Path
) -> Iterator[ModuleType]:
    """The entry module imported as Lambda imports it (the token secret is the caller's to set)."""
    monkeypatch.setenv("DYNAMODB_ENDPOINT", dynamodb_endpoint)
    monkeypatch.setenv("HR_TABLE_NAME", table_name)
    monkeypatch.setenv("HR_ENV", "production")
    monkeypatch.setenv("ALLOWED_HOSTS", "*")  # as the template sets it: API Gateway checks the host
    monkeypatch.setenv("OIDC_ISSUER", idp.ISSUER)
    monkeypatch.setenv("OIDC_AUDIENCE", idp.CLIENT_ID)
    monkeypatch.setenv("OIDC_JWKS", str(idp.write_jwks(tmp_path / "jwks.json", idp.RSA, idp.EC)))
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "hr-api")  # set by Lambda itself
    for name in ENTRY_MODULES:
        sys.modules.pop(name, None)
    root = logging.getLogger()
    saved_logging = (list(root.handlers), root.level)
    gc.unfreeze()  # so a test can tell that the import froze the heap (heap.settle_heap)
    thresholds = gc.get_threshold()
    module = importlib.import_module("graphql_api.entrypoints.lambda_handler")  # configures logging, as at init
    try:
        yield module
    finally:
        gc.unfreeze()  # the test process goes on: its objects are collectable again
        gc.set_threshold(*thresholds)
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved_logging[0]:
            root.addHandler(handler)
        root.setLevel(saved_logging[1])
        logging.getLogger("uvicorn.access").disabled = False
        logging.getLogger("mangum.http").setLevel(logging.NOTSET)
        # Mangum runs every invocation on an event loop it creates once and keeps (Lambda's one
        # process); the entry closes the read path's connections on it, then it, or its
        # sockets are reported unclosed in whichever test runs next.
        module.close()
        for name in ENTRY_MODULES:
            sys.modules.pop(name, None)


def event(method: str, path: str, *, body: str | None = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """An HTTP API payload-2.0 event, as API Gateway sends it to the function."""
    raw_path, _, query = path.partition("?")
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": {"host": "abc123.execute-api.eu-west-1.amazonaws.com", **(headers or {})},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.eu-west-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "test",
            },
            "requestId": "lambda-test",
            "routeKey": "$default",
            "stage": "$default",
            "time": "22/Nov/2026:04:00:00 +0000",
            "timeEpoch": 1795320000000,
        },
        "body": body,
        "isBase64Encoded": False,
    }


def graphql_event(query: str, token: str | None) -> dict[str, Any]:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return event("POST", "/graphql", body=json.dumps({"query": query}), headers=headers)


def body_of(response: dict[str, Any]) -> dict[str, Any]:
    raw = response["body"]
    if response.get("isBase64Encoded"):
        raw = base64.b64decode(raw)
        if response["headers"].get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
    decoded: dict[str, Any] = json.loads(raw)
    return decoded


def token_for(employee: Employee) -> str:
    settings = ApiSettings.from_env({"HR_ENV": "test", "JWT_SECRET": TEST_SECRET})
    return issue_token(settings, subject=employee.emp_id, org_id=employee.org_id, role=employee.role.value)


def test_handler__graphql_query__answers_from_dynamodb(entry: ModuleType, demo: Demo) -> None:
    alice = demo.person("alice@acme.co")

    response = entry.handler(graphql_event("{ me { email } organization { name } }", token_for(alice)), None)

    assert response["statusCode"] == 200
    assert body_of(response)["data"] == {"me": {"email": "alice@acme.co"}, "organization": {"name": "Acme Corp"}}


def test_entry__import__heap_built_so_far_frozen(entry: ModuleType) -> None:
    """Lambda's init phase (and each uvicorn worker) imports the entry module: what it built
    is taken out of the cyclic collector's reach, so no full collection walks it mid-request;
    young collections come further apart."""
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == heap.YOUNG_OBJECTS


def test_handler__bad_token__401_unauthenticated(entry: ModuleType) -> None:
    response = entry.handler(graphql_event("{ me { email } }", "not-a-token"), None)

    assert response["statusCode"] == 401
    (error,) = body_of(response)["errors"]
    assert error["extensions"]["code"] == "UNAUTHENTICATED"


def test_handler__token_exchange__signs_in_with_an_id_token(entry: ModuleType) -> None:
    form = urllib.parse.urlencode(
        {
            "grant_type": GRANT_TYPE,
            "subject_token": idp.id_token("alice@acme.co", idp.EC),
            "subject_token_type": ID_TOKEN_TYPE,
        }
    )
    exchange = event("POST", "/auth/token", body=form, headers={"content-type": "application/x-www-form-urlencoded"})

    response = entry.handler(exchange, None)

    assert response["statusCode"] == 200, response
    access_token = body_of(response)["access_token"]
    me = entry.handler(graphql_event("{ me { email role } }", access_token), None)
    assert body_of(me)["data"] == {"me": {"email": "alice@acme.co", "role": "ADMIN"}}


def test_handler__token_exchange__refused_grant_is_oauth_error(entry: ModuleType) -> None:
    form = urllib.parse.urlencode(
        {
            "grant_type": GRANT_TYPE,
            "subject_token": idp.id_token("nobody@acme.co", idp.RSA),
            "subject_token_type": ID_TOKEN_TYPE,
        }
    )
    response = entry.handler(
        event("POST", "/auth/token", body=form, headers={"content-type": "application/x-www-form-urlencoded"}), None
    )

    assert response["statusCode"] == 400
    assert body_of(response)["error"] == "invalid_grant"


def test_handler__request__access_line_carries_its_metrics_as_emf(entry: ModuleType, demo: Demo) -> None:
    dave = demo.person("dave@acme.co")
    with captured_lines() as captured:
        response = entry.handler(graphql_event(docs_directory_query(), token_for(dave)), None)
        lines = captured.lines()  # written before the handler returned

    body = body_of(response)
    cost = body["extensions"]["cost"]
    (line,) = lines
    assert line["logger"] == "hr.access"
    emf = line["_aws"]
    assert isinstance(emf["Timestamp"], int)
    directives = emf["CloudWatchMetrics"]
    # Every dimension and metric a directive names is a top-level member of the line.
    for directive in directives:
        assert directive["Namespace"] == "HrApi"
        for dimension_set in directive["Dimensions"]:
            assert all(isinstance(line[dimension], str) for dimension in dimension_set)
        for metric in directive["Metrics"]:
            assert isinstance(line[metric["Name"]], int | float), metric
            assert metric["Unit"] in ("Milliseconds", "Count")
    assert [(d["Dimensions"], [m["Name"] for m in d["Metrics"]]) for d in directives] == [
        ([["Operation"], ["Status"], []], ["Latency", "Requests"]),
        ([["Tenant"]], ["DynamoDBCalls", "ReadCapacityUnits", "WriteCapacityUnits"]),
        ([[]], ["Errors.FORBIDDEN"]),
    ]
    assert line["Operation"] == "anonymous"
    assert line["Tenant"] == dave.org_id
    assert line["Status"] == "200"
    assert line["Requests"] == 1
    assert line["DynamoDBCalls"] == cost["requestCount"] > 0
    assert line["ReadCapacityUnits"] == cost["readCapacityUnits"] > 0
    assert len(body["errors"]) > 1
    assert line["Errors.FORBIDDEN"] == 1  # once per request per code
    # The log's own fields keep the true values beside the dimensions.
    assert (line["tenant"], line["operation"], line["status"]) == (dave.org_id, None, 200)


def test_handler__api_key__use_recorded_before_the_response(
    entry: ModuleType, demo: Demo, dynamo: AsyncDynamo, table_name: str
) -> None:
    """Lambda freezes the environment once the handler returns: the write must be done by then.

    The UpdateItem is held 0.5 s, far longer than the rest of the request, so a write left
    running beside the response would still be unfinished when the handler returns.
    """
    acme = Table(dynamo, table_name, TenantScope(demo.person("alice@acme.co").org_id))
    key, secret = run(api_keys.create_api_key(acme, name="lambda", role=Role.EMPLOYEE))
    lambda_dynamo = sys.modules["graphql_api.entrypoints.asgi"].datastore.aio

    async def slow_write(request: Request) -> None:
        if faults.operation_of(request) == "UpdateItem":
            await asyncio.sleep(0.5)

    with faults.on_send(lambda_dynamo, slow_write), calls.listening() as log:
        first = entry.handler(graphql_event("{ organization { name } }", secret), None)
        at_return = [(c.operation, c.finished is not None) for c in log.snapshot()]
        again = entry.handler(graphql_event("{ organization { name } }", secret), None)
        both = log.operations()

    assert body_of(first)["data"] == body_of(again)["data"] == {"organization": {"name": "Acme Corp"}}
    assert ("UpdateItem", True) in at_return
    recorded = run(api_keys.get_api_key(acme, key.key_id, consistent=True))
    assert recorded is not None and recorded.last_used_at is not None
    assert both.count("UpdateItem") == 1  # the second use, within the minute, writes nothing


def test_handler__jwt_secret_arn__secret_read_from_secrets_manager_at_init(
    monkeypatch: pytest.MonkeyPatch, dynamodb_endpoint: str, table_name: str, demo: Demo, tmp_path: Path
) -> None:
    """As the template deploys it: the function has the secret's ARN, never the secret."""
    from datastore.dev.local_sts import serving_sts

    secret = "generated-by-secrets-manager-" + "k" * 40
    alice = demo.person("alice@acme.co")
    with serving_sts() as moto_url:  # moto's server speaks Secrets Manager too
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.setenv(name, "testing")
        monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", moto_url)
        manager = boto3.client("secretsmanager", region_name="eu-west-1", endpoint_url=moto_url)
        monkeypatch.setenv("JWT_SECRET_ARN", manager.create_secret(Name="hr-api-jwt", SecretString=secret)["ARN"])
        monkeypatch.delenv("JWT_SECRET", raising=False)
        with imported_entry(monkeypatch, dynamodb_endpoint, table_name, tmp_path) as module:
            signed = ApiSettings.from_env({"HR_ENV": "test", "JWT_SECRET": secret})
            token = issue_token(signed, subject=alice.emp_id, org_id=alice.org_id, role=alice.role.value)
            answered = module.handler(graphql_event("{ me { email } }", token), None)
            refused = module.handler(graphql_event("{ me { email } }", token_for(alice)), None)  # another secret

    assert answered["statusCode"] == 200
    assert body_of(answered)["data"] == {"me": {"email": "alice@acme.co"}}
    assert refused["statusCode"] == 401

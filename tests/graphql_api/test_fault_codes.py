"""Every root field and mutation, under every DynamoDB fault: every error is coded and clean.

The fields are enumerated from the schema, so a new one is covered without touching this
file; arguments are generated from their types (a valid literal for every required one).
Faults are injected at the client boundary (tests/datastore/faults.py ``failing_calls``), and
every fault is tried on both executors: the compiled plans and graphql-core alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import botocore.exceptions
import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    ast_from_value,
    get_named_type,
    is_leaf_type,
    print_ast,
)

from datastore.aws.client import AsyncDynamo
from graphql_api.app import create_app
from graphql_api.execution import ids
from graphql_api.execution.documents import Documents
from graphql_api.execution.errors import Code
from graphql_api.execution.library_internals import graphql_schema
from graphql_api.schema.executable import build_schema
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.datastore import faults
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import EXECUTORS, serving, with_settings
from tests.paths import ERROR_CODES

SCHEMA = graphql_schema(build_schema([]))
# Only platform operators may call these; every other field is called as a tenant's admin.
PLATFORM_FIELDS = frozenset({"organizations", "createOrganization", "addEmailDomain"})
DEADLINE_SECONDS = 0.5


def backend_names() -> set[str]:
    """Every botocore exception class name, and the AWS error codes the faults use."""
    names = {name for name, value in vars(botocore.exceptions).items() if isinstance(value, type)}
    return names | {"ThrottlingException", "InternalServerError", "ProvisionedThroughputExceeded"}


def literal(type_: GraphQLInputType, name: str) -> Any:
    """A valid value for a required argument or input field of ``type_``."""
    if isinstance(type_, GraphQLNonNull):
        return literal(type_.of_type, name)
    if isinstance(type_, GraphQLList):
        return [literal(type_.of_type, name)]
    if isinstance(type_, GraphQLEnumType):
        return next(iter(type_.values.values())).value
    if isinstance(type_, GraphQLInputObjectType):
        return {
            field_name: literal(field.type, field_name)
            for field_name, field in type_.fields.items()
            if isinstance(field.type, GraphQLNonNull)
        }
    assert isinstance(type_, GraphQLScalarType)
    scalar = type_.name
    lowered = name.lower()
    if scalar == "ID":
        kind = {"dept": "Department", "job": "JobPosting", "app": "Application", "org": "Organization"}
        type_name = next((v for k, v in kind.items() if k in lowered), "Employee")
        parts = ("01J00000000000000000000000", "01J00000000000000000000001")[: 2 if type_name == "Application" else 1]
        return ids.encode(type_name, *parts)
    if scalar in ("Int", "Float"):
        return 1
    if scalar == "Boolean":
        return True
    if "domain" in lowered:
        return "example.com"
    if "email" in lowered:
        return "fault.test@example.com"
    if "key" in lowered:
        return "fault-test-key-0001"
    if "date" in lowered:
        return "2026-01-01"
    return "Fault Test"


def document(operation: str, name: str, field: GraphQLField) -> str:
    args = []
    for arg_name, arg in field.args.items():
        if isinstance(arg.type, GraphQLNonNull):
            value = ast_from_value(literal(arg.type, arg_name), arg.type)
            assert value is not None
            args.append(f"{arg_name}: {print_ast(value)}")
    call = f"{name}({', '.join(args)})" if args else name
    return f"{operation} {{ {call}{selection(field)} }}"


def selection(field: GraphQLField) -> str:
    """Every scalar of the returned object that takes no argument, so the field loads it."""
    named = get_named_type(field.type)
    if is_leaf_type(named):
        return ""
    fields = getattr(named, "fields", {})
    leaves = [
        name
        for name, sub in fields.items()
        if is_leaf_type(get_named_type(sub.type))
        and not any(isinstance(a.type, GraphQLNonNull) for a in sub.args.values())
    ]
    return " { " + " ".join(["__typename", *leaves]) + " }"


def root_fields() -> Iterator[tuple[str, str]]:
    for operation, root in (("query", SCHEMA.query_type), ("mutation", SCHEMA.mutation_type)):
        assert root is not None
        for name, field in root.fields.items():
            if name in ("node", "nodes") or not name.startswith("_"):
                yield name, document(operation, name, field)


FIELDS = list(root_fields())


@dataclass
class FaultServer:
    api: Api
    documents: Documents
    compiled_plans: bool


@pytest.fixture(scope="module", params=EXECUTORS.values(), ids=list(EXECUTORS))
def short_api(
    new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings, request: Any
) -> Iterator[FaultServer]:
    """A server with a short deadline, so an answer that never comes costs half a second, with
    each executor: the compiled plans, and graphql-core alone (COMPILED_PLANS=false)."""
    settings = with_settings(api_settings, request_timeout_seconds=DEADLINE_SECONDS, compiled_plans=request.param)
    app = create_app(new_datastore(table_name), settings)
    with serving(app) as http:
        yield FaultServer(Api(http, settings), app.state.documents, request.param)


def test_documented_codes__docs_list_every_code() -> None:
    documented = ERROR_CODES.read_text()
    missing = [code.value for code in Code if f"`{code.value}`" not in documented]
    assert missing == []


def test_fields__enumerated_from_the_schema__queries_and_mutations() -> None:
    names = {name for name, _ in FIELDS}
    assert {"me", "organization", "createEmployee", "moveEmployee", "createOrganization"} <= names
    assert len(names) == len(SCHEMA.query_type.fields) + len(SCHEMA.mutation_type.fields)  # type: ignore[union-attr]


@pytest.mark.parametrize("fault", faults.CALL_FAULTS)
def test_every_root_field__dynamodb_fault__every_error_coded_and_no_backend_name(
    short_api: FaultServer, tenant: Tenant, dynamo: AsyncDynamo, fault: str
) -> None:
    backend = backend_names()
    documented = {code.value for code in Code}
    seen_codes: set[str] = set()
    failed: set[str] = set()
    with faults.failing_calls(dynamo, hang_seconds=DEADLINE_SECONDS * 2) as injected:
        injected.fault = fault
        admin, platform = short_api.api.admin_of(tenant), short_api.api.platform
        # Concurrently: an answer that never comes costs each request its whole deadline.
        with ThreadPoolExecutor(len(FIELDS)) as pool:
            responses = list(
                pool.map(lambda field: (platform if field[0] in PLATFORM_FIELDS else admin).post(field[1]), FIELDS)
            )
        for (name, _query), response in zip(FIELDS, responses, strict=True):
            body = response.json()
            errors = body.get("errors", [])
            if not errors:  # only a field that reads nothing can succeed during an outage
                assert body["extensions"]["cost"]["requestCount"] == 0, (name, body)
            else:
                failed.add(name)
            for error in errors:
                code = error.get("extensions", {}).get("code")
                assert code in documented, (name, error)
                assert not any(word in error["message"] for word in backend), (name, error)
                seen_codes.add(code)
            # No data because of the outage: 503 (504 past the deadline); data, even partial: 200.
            codes = {error.get("extensions", {}).get("code") for error in errors}
            expected = 200
            if body.get("data") is None and errors:
                expected = 503 if Code.UNAVAILABLE.value in codes else 504
            assert response.status_code in (expected, 504), (name, response.status_code, body)
    assert injected.injected > 0
    # The queries ran on the executor under test.
    assert (short_api.documents.planned_runs > 0) is short_api.compiled_plans
    assert {"me", "organizations", "createEmployee", "createOrganization"} <= failed
    # An outage is UNAVAILABLE, or TIMEOUT when the deadline passes first; never INTERNAL.
    assert seen_codes <= {Code.UNAVAILABLE.value, Code.TIMEOUT.value}, seen_codes

"""The caller's active check (graphql_api/auth/active.py): its failures go through the one error
translation, and a field's failure never cancels the read it shares with the check.

The refusals themselves (suspended organisation, inactive employee, stale role) are in
test_roles.py; the check's price in DynamoDB calls is in test_round_trips.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from datastore.aws.client import AsyncDynamo
from graphql_api.app import create_app
from graphql_api.execution import ids
from graphql_api.settings.api import ApiSettings
from tests.conftest import DatastoreFactory, Tenant
from tests.datastore import faults
from tests.graphql_api.fixtures import Api
from tests.graphql_api.live import serving, with_settings

# `name` awaits the organisation's item, the very read the check awaits; `departments`
# (non-null) fails at once on its argument, so graphql-core cancels its siblings' awaitables
# while that shared read is still pending.
SHARED_READ_AND_FAILING_SIBLING = "{ organization { name departments(first: -1) { edges { node { name } } } } }"


@pytest.fixture(scope="module", params=[False, True], ids=["graphql-core", "compiled-plans"])
def api(
    request: pytest.FixtureRequest, new_datastore: DatastoreFactory, table_name: str, api_settings: ApiSettings
) -> Iterator[Api]:
    settings = with_settings(api_settings, compiled_plans=request.param)
    with serving(create_app(new_datastore(table_name), settings)) as http:
        yield Api(http, settings)


def test_shared_read__non_null_sibling_fails_while_pending__coded_error_not_500(api: Api, tenant: Tenant) -> None:
    for _ in range(3):  # the race is decided by the loop's order: every run must be clean
        response = api.admin_of(tenant).post(SHARED_READ_AND_FAILING_SIBLING)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["data"] == {"organization": None}
        assert [error["extensions"]["code"] for error in body["errors"]] == ["BAD_USER_INPUT"]


def test_shared_read__mutation_payload_fails__coded_error_not_500(api: Api, tenant: Tenant) -> None:
    department = tenant.department("Shared Reads")
    response = api.admin_of(tenant).post(
        "mutation($i: UpdateDepartmentInput!) { updateDepartment(input: $i) { department { name "
        "employees(first: -1) { edges { node { email } } } } } }",
        {"i": {"id": department_id(department.dept_id), "name": "Renamed"}},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert [error["extensions"]["code"] for error in body["errors"]] == ["BAD_USER_INPUT"]


def department_id(dept_id: str) -> str:
    return ids.encode("Department", dept_id)


@pytest.mark.parametrize(
    "document", ["{ me { email } }", 'mutation { createDepartment(input: { name: "X" }) { department { id } } }']
)
def test_caller_check__outage__unavailable_with_request_id_and_logged(
    api: Api, tenant: Tenant, dynamo: AsyncDynamo, caplog: pytest.LogCaptureFixture, document: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="hr.errors"), faults.failing_calls(dynamo) as injected:
        injected.fault = faults.THROTTLED
        response = api.admin_of(tenant).post(document)
    assert injected.injected > 0
    assert response.status_code == 503, response.text  # no data, because of the outage
    body = response.json()
    assert body.get("data") is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "UNAVAILABLE"
    request_id = error["extensions"]["requestId"]
    assert request_id == response.headers["x-request-id"]
    assert any(request_id in record.getMessage() and "unavailable" in record.getMessage() for record in caplog.records)

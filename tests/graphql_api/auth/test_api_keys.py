"""API keys over HTTP with the real app: create, use, list, revoke, roles, and the calls they cost."""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from datastore.aws import calls
from datastore.aws.calls import CallLog
from datastore.aws.client import AsyncDynamo
from datastore.kinds import layout
from datastore.signin import api_keys
from datastore.values.ids import new_id
from graphql_api.execution import ids
from tests.blocking import run
from tests.conftest import Tenant, TenantFactory
from tests.datastore import faults
from tests.graphql_api.test_fault_codes import backend_names

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    pass
from tests.graphql_api.fixtures import Api, GraphQLClient
from tests.key_guard import org_id_of

CREATE = (
    "mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret "
    "apiKey { id name role status createdAt lastUsedAt revokedAt } } }"
)
REVOKE = "mutation($input: RevokeApiKeyInput!) { revokeApiKey(input: $input) { apiKey { id status revokedAt } } }"
LIST = "{ organization { apiKeys(first: 100) { edges { node { id name role status lastUsedAt revokedAt } } } } }"
DIRECTORY = "{ organization { id name employees(first: 5) { edges { node { id email } } } } }"
CREATE_DEPARTMENT = "mutation($input: CreateDepartmentInput!) { createDepartment(input: $input) { department { id } } }"


def create_key(admin: GraphQLClient, role: str = "ADMIN", name: str = "HRIS sync") -> tuple[str, str]:
    """A new key's global id and secret."""
    created = admin.data(CREATE, {"input": {"name": name, "role": role}})["createApiKey"]
    return created["apiKey"]["id"], created["secret"]


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


def lookup_calls(log: CallLog, secret: str, since: int = 0) -> list[calls.Call]:
    """The calls sent to a key's lookup item, from the ``since``-th call of ``log`` on."""
    pk = layout.API_KEY_LOOKUP.partition(hashlib.sha256(secret.encode()).hexdigest())
    return [call for call in log.snapshot()[since:] if pk in call.partition_keys()]


def lookups(log: CallLog, secret: str, since: int = 0) -> list[str]:
    return [call.operation for call in lookup_calls(log, secret, since)]


def record_updates(log: CallLog, tenant: Tenant, key_id: str) -> int:
    """UpdateItem calls on a key's own record (lastUsedAt)."""
    record = layout.API_KEY.key_at(tenant.org_id, key_id).wire()
    return sum(1 for call in log.snapshot() if call.operation == "UpdateItem" and call.params.get("Key") == record)


def wait_for_last_used(tenant: Tenant, key_id: str) -> None:
    """Wait (bounded) for the use recorded after the response; no timing is asserted."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = run(api_keys.get_api_key(tenant.table, key_id, consistent=True))
        if found is not None and found.last_used_at is not None:
            return
        time.sleep(0.02)
    raise AssertionError("lastUsedAt was never recorded")


def test_api_key__create_use_list_revoke__refused_401_at_once(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    created = admin.data(CREATE, {"input": {"name": " HRIS sync ", "role": "ADMIN"}})["createApiKey"]
    secret = created["secret"]
    assert secret.startswith("hrk_")
    assert created["apiKey"]["name"] == "HRIS sync"
    assert (created["apiKey"]["role"], created["apiKey"]["status"]) == ("ADMIN", "ACTIVE")
    assert created["apiKey"]["lastUsedAt"] is None and created["apiKey"]["revokedAt"] is None

    key = admin.with_token(secret)
    data = key.data(DIRECTORY)
    assert data["organization"]["id"] == ids.encode("Organization", tenant.org_id)
    assert tenant.admin.email in [edge["node"]["email"] for edge in data["organization"]["employees"]["edges"]]
    assert key.data("{ me { id } }") == {"me": None}

    (key_id,) = ids.parts_of(created["apiKey"]["id"], "ApiKey", 1, "id") or ("",)
    wait_for_last_used(tenant, key_id)
    listed = [edge["node"] for edge in admin.data(LIST)["organization"]["apiKeys"]["edges"]]
    assert [(k["id"], k["status"]) for k in listed] == [(created["apiKey"]["id"], "ACTIVE")]
    assert listed[0]["lastUsedAt"] is not None
    assert secret not in str(listed)

    revoked = admin.data(REVOKE, {"input": {"id": created["apiKey"]["id"]}})["revokeApiKey"]["apiKey"]
    assert revoked["status"] == "REVOKED" and revoked["revokedAt"] is not None
    response = key.post(DIRECTORY)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert codes(response.json()) == ["UNAUTHENTICATED"]
    assert "revoked" in response.json()["errors"][0]["message"]
    assert response.json()["errors"][0]["extensions"]["reason"] == "TOKEN_INVALID"
    again = admin.query(REVOKE, {"input": {"id": created["apiKey"]["id"]}})
    assert codes(again) == ["CONFLICT"]


def test_api_key__authentication__exactly_one_get_item(api: Api, tenant: Tenant, call_log: CallLog) -> None:
    _id, secret = create_key(api.admin_of(tenant))
    before = len(call_log.snapshot())
    api.admin_of(tenant).with_token(secret).data("{ organization { name } }")
    (lookup,) = lookup_calls(call_log, secret, before)
    assert lookup.operation == "GetItem"
    assert lookup.params["ConsistentRead"] is True


def test_api_key__me_and_its_applications__null_and_nothing_read_ahead(api: Api, tenant: Tenant) -> None:
    """A key is no person: ``me`` is null, and its applications are not read ahead beside it
    (a plan reads ``me``'s applications in ``me``'s own wave only for a person)."""
    _id, secret = create_key(api.admin_of(tenant))
    key = api.admin_of(tenant).with_token(secret)
    with calls.listening() as log:
        assert key.data("{ me { applications(first: 2) { edges { cursor } } } }") == {"me": None}
    assert "Query" not in [call.operation for call in log.snapshot()]


def test_api_key__two_requests_within_a_minute__last_used_written_once(
    api: Api, tenant: Tenant, call_log: CallLog
) -> None:
    key_global_id, secret = create_key(api.admin_of(tenant), role="EMPLOYEE")
    (key_id,) = ids.parts_of(key_global_id, "ApiKey", 1, "id") or ("",)
    key = api.admin_of(tenant).with_token(secret)
    before = len(call_log.snapshot())
    key.data("{ organization { name } }")
    key.data("{ organization { name } }")
    wait_for_last_used(tenant, key_id)
    key.data("{ organization { name } }")
    assert record_updates(call_log, tenant, key_id) == 1
    assert lookups(call_log, secret, before) == ["GetItem"] * 3


def test_employee_key__mutations__forbidden_and_nothing_sent(api: Api, tenant: Tenant, call_log: CallLog) -> None:
    _id, secret = create_key(api.admin_of(tenant), role="EMPLOYEE")
    key = api.admin_of(tenant).with_token(secret)
    before = len(call_log.snapshot())
    body = key.query(CREATE_DEPARTMENT, {"input": {"name": "Shadow IT"}})
    assert body.get("data") is None and codes(body) == ["FORBIDDEN"]
    body = key.query(CREATE, {"input": {"name": "escalate", "role": "ADMIN"}})
    assert body.get("data") is None and codes(body) == ["FORBIDDEN"]
    sent = [c.operation for c in call_log.snapshot()[before:] if c.operation != "UpdateItem"]
    assert sent == ["GetItem", "GetItem"]  # the two key lookups, nothing else


@pytest.mark.parametrize(
    ("field", "query"),
    [
        ("apiKeys", "{ organization { apiKeys { edges { node { id } } } } }"),
        ("emailDomains", "{ organization { emailDomains } }"),
        ("billingCustomerId", "{ organization { subscription { billingCustomerId } } }"),
        ("auditLog", "{ organization { auditLog { edges { node { action } } } } }"),
    ],
)
def test_employee_key__admin_only_fields__forbidden(api: Api, tenant: Tenant, field: str, query: str) -> None:
    _id, secret = create_key(api.admin_of(tenant), role="EMPLOYEE")
    body = api.admin_of(tenant).with_token(secret).query(query)
    assert codes(body) == ["FORBIDDEN"], field


def test_admin_key__mutates_and_is_audited__but_cannot_apply_as_a_person(api: Api, tenant: Tenant) -> None:
    key_global_id, secret = create_key(api.admin_of(tenant), role="ADMIN")
    (key_id,) = ids.parts_of(key_global_id, "ApiKey", 1, "id") or ("",)
    key = api.admin_of(tenant).with_token(secret)
    created = key.data(CREATE_DEPARTMENT, {"input": {"name": "Integrations"}})
    assert created["createDepartment"]["department"]["id"]
    apply = "mutation($input: ApplyToJobInput!) { applyToJob(input: $input) { application { id } } }"
    body = key.query(apply, {"input": {"jobPostingId": ids.encode("JobPosting", new_id())}})
    assert codes(body) == ["FORBIDDEN"]
    log = api.admin_of(tenant).data("{ organization { auditLog(first: 5) { edges { node { action entityId } } } } }")[
        "organization"
    ]["auditLog"]["edges"]
    actions = [(edge["node"]["action"], edge["node"]["entityId"]) for edge in log]
    assert actions[1] == ("apiKey.create", key_id)  # using a key is no event; creating one is
    assert actions[0][0] == "department.create"


def test_api_key__suspended_organization__refused(api: Api, tenant: Tenant, client: DynamoDBClient) -> None:
    _id, secret = create_key(api.admin_of(tenant))
    table = tenant.table
    client.update_item(
        TableName=table.name,
        Key=layout.ORGANIZATION.key_at(tenant.org_id).wire(),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": "suspended"}},
    )
    key = api.admin_of(tenant).with_token(secret)
    for document, variables in ((DIRECTORY, None), (CREATE_DEPARTMENT, {"input": {"name": "Late"}})):
        body = key.query(document, variables)
        assert body.get("data") is None and codes(body) == ["UNAUTHENTICATED"]


def test_create_api_key__manager_role_or_non_admin__refused(api: Api, tenant: Tenant) -> None:
    body = api.admin_of(tenant).query(CREATE, {"input": {"name": "x", "role": "MANAGER"}})
    assert codes(body) == ["BAD_USER_INPUT"] and body["errors"][0]["extensions"]["field"] == "input.role"
    employee = tenant.employee()
    body = api.as_(employee).query(CREATE, {"input": {"name": "x", "role": "EMPLOYEE"}})
    assert codes(body) == ["FORBIDDEN"]
    body = api.as_(employee).query(LIST)
    assert codes(body) == ["FORBIDDEN"] and body["data"]["organization"]["apiKeys"] is None


# --- isolation and attacks -------------------------------------------------------------------


def test_api_key__of_org_a__never_reaches_org_b(api: Api, make_tenant: TenantFactory, call_log: CallLog) -> None:
    a, b = make_tenant("A"), make_tenant("B")
    a_key_id, a_secret = create_key(api.admin_of(a))
    b_key_id, b_secret = create_key(api.admin_of(b))
    b_employee = ids.encode("Employee", b.admin.emp_id)
    before = len(call_log.snapshot())
    key_a = api.admin_of(a).with_token(a_secret)
    assert key_a.data("query($id: ID!) { node(id: $id) { id } }", {"id": b_employee}) == {"node": None}
    listed = key_a.data(LIST)["organization"]["apiKeys"]["edges"]
    assert [edge["node"]["id"] for edge in listed] == [a_key_id]
    # B's key id, revoked through A's key and A's admin: NOT_FOUND, and B's key keeps working.
    for client in (key_a, api.admin_of(a)):
        body = client.query(REVOKE, {"input": {"id": b_key_id}})
        assert body["data"] == {"revokeApiKey": None} and codes(body) == ["NOT_FOUND"]
    sent_for_a = call_log.snapshot()[before:]
    assert sent_for_a
    for call in sent_for_a:
        assert all(org_id_of(pk) in (None, a.org_id) for pk in call.partition_keys()), call
        assert not lookup_calls(_only(call), b_secret), call
    assert api.admin_of(b).with_token(b_secret).data("{ organization { id } }")["organization"]["id"] == (
        ids.encode("Organization", b.org_id)
    )


def _only(call: calls.Call) -> CallLog:
    log = CallLog()
    log.add(call)
    return log


@pytest.mark.parametrize(
    "credential",
    [
        "hrk_",
        "hrk_short",
        "hrk_" + "A" * 42,
        "hrk_" + "A" * 44,
        "hrk_" + "!" * 43,
        "hrk_" + "é" * 43,
        "hrk_" + "A" * 10_000,
        "HRK_" + "A" * 43,
    ],
)
def test_api_key__malformed__401_unauthenticated_without_a_lookup(
    http: httpx.Client, credential: str, call_log: CallLog
) -> None:
    # Raw bytes: a header is not always ASCII (httpx would refuse to send a str that is not).
    authorization = f"Bearer {credential}".encode()
    response = http.post(
        "/graphql", json={"query": "{ organization { id } }"}, headers={"Authorization": authorization}
    )
    assert response.status_code == 401
    assert codes(response.json()) == ["UNAUTHENTICATED"]
    assert [c for c in call_log.snapshot() if any(pk.startswith("APIKEY#") for pk in c.partition_keys())] == []


def test_api_key__forged_well_formed__401_after_one_lookup(http: httpx.Client, call_log: CallLog) -> None:
    forged = api_keys.new_secret()
    response = http.post(
        "/graphql", json={"query": "{ organization { id } }"}, headers={"Authorization": f"Bearer {forged}"}
    )
    assert response.status_code == 401 and codes(response.json()) == ["UNAUTHENTICATED"]
    assert lookups(call_log, forged) == ["GetItem"]  # then nothing else: no tenant is known


def test_revoke_api_key__forged_ids__not_found_or_bad_input(api: Api, tenant: Tenant) -> None:
    admin = api.admin_of(tenant)
    key_global_id, secret = create_key(admin)
    (key_id,) = ids.parts_of(key_global_id, "ApiKey", 1, "id") or ("",)
    for forged in (ids.encode("Employee", key_id), ids.encode("ApiKey", new_id())):
        assert codes(admin.query(REVOKE, {"input": {"id": forged}})) == ["NOT_FOUND"]
    assert codes(admin.query(REVOKE, {"input": {"id": "not-an-id"}})) == ["BAD_USER_INPUT"]
    assert admin.with_token(secret).data("{ organization { id } }")  # still active


@pytest.mark.parametrize("fault", faults.CALL_FAULTS)
def test_api_key__lookup_fails__503_unavailable_never_401_or_a_backend_name(
    api: Api, tenant: Tenant, dynamo: AsyncDynamo, fault: str
) -> None:
    _id, secret = create_key(api.admin_of(tenant))
    with faults.failing_calls(dynamo, hang_seconds=0.2) as injected:
        injected.fault = fault
        response = api.admin_of(tenant).with_token(secret).post("{ organization { id } }")
    assert injected.injected > 0
    assert response.status_code == 503
    body = response.json()
    assert codes(body) == ["UNAVAILABLE"] and body["errors"][0]["extensions"]["retryable"] is True
    assert not any(name in response.text for name in backend_names())

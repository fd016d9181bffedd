"""The key guard (its session test runs last): every DynamoDB request stays in a named space.

``session_requests`` (tests/conftest.py) records every request of the whole test session
with botocore's event hooks; this module runs last and checks them all: each request's
partition keys (table or index) lie in one organisation's ``ORG#<orgId>`` space, or on a
named path (identity ``EMAIL#`` items, the platform's ``ORGS`` list). The API test then
binds requests to their caller: everything an employee's request sends starts with their
own organisation.
"""

from __future__ import annotations

from datastore.aws import calls
from datastore.aws.calls import Call
from datastore.kinds import layout
from datastore.tenancy import keys
from datastore.values import ids
from tests.conftest import Tenant
from tests.graphql_api.fixtures import Api
from tests.key_guard import Findings, violations


def test_violations__detects_foreign_and_unnamed_keys() -> None:
    org_a, org_b = ids.new_id(), ids.new_id()
    spanning = Call(
        "BatchGetItem",
        {"RequestItems": {"t": {"Keys": [{"PK": {"S": keys.org_pk(org_a)}}, {"PK": {"S": keys.org_pk(org_b)}}]}}},
        0.0,
    )
    assert violations(spanning)
    assert violations(Call("GetItem", {"Key": {"PK": {"S": "USER#1"}}}, 0.0))
    assert violations(Call("Scan", {"TableName": "t"}, 0.0))
    assert not violations(Call("GetItem", {"Key": {"PK": {"S": layout.IDENTITY.partition("a@example.com")}}}, 0.0))
    assert not violations(Call("GetItem", {"Key": layout.LAYOUT_VERSION_ITEM.key_at().wire()}, 0.0))
    assert violations(Call("GetItem", {"Key": {"PK": {"S": keys.LAYOUT_PK + "#X"}}}, 0.0))
    put = {"PutRequest": {"Item": {"PK": {"S": keys.org_pk(org_a)}}}}
    put_b = {"PutRequest": {"Item": {"PK": {"S": keys.org_pk(org_b)}}}}
    assert not violations(Call("BatchWriteItem", {"RequestItems": {"t": [put, put]}}, 0.0))
    assert violations(Call("BatchWriteItem", {"RequestItems": {"t": [put, put_b]}}, 0.0))


def test_api_requests__only_in_the_callers_org(api: Api, tenant: Tenant, make_tenant: object) -> None:
    other = make_tenant()  # type: ignore[operator]
    other.department("Theirs")
    tenant.department("Ours")
    query = """{ me { email department { name } } organization { name
      departments { edges { node { name manager { email } employees { edges { node { email } } } } } }
      employees { edges { node { email applications { edges { node { id } } } } } }
      byName: employees(orderBy: NAME) { edges { node { email } } }
      found: employees(search: "te") { edges { node { email } } }
      jobPostings { edges { node { title applications { edges { node { id } } } } } } } }"""
    with calls.listening() as log:
        assert "errors" not in api.admin_of(tenant).query(query)
    sent = [pk for call in log.snapshot() for pk in call.partition_keys()]
    assert sent
    assert all(keys.in_tenant(pk, tenant.org_id) for pk in sent), sent


def test_every_request_of_the_session__in_one_named_partition_space(session_requests: Findings) -> None:
    session_requests.check("(this module)")
    assert session_requests.checked, "the session made no DynamoDB request: is the listener installed?"
    problems = session_requests.problems
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:50])
    print(f"key guard: {session_requests.checked} DynamoDB requests checked")

"""Root fields over HTTP."""

from __future__ import annotations

from tests.conftest import Tenant
from tests.graphql_api.conftest import Api, GraphQLClient


def test_me__returns_the_caller(api: Api, tenant: Tenant) -> None:
    data = api.admin_of(tenant).data("{ me { email role status } }")
    assert data["me"] == {"email": tenant.admin.email, "role": "ADMIN", "status": "ACTIVE"}


def test_me__without_token__is_unauthenticated(anonymous: GraphQLClient) -> None:
    body = anonymous.query("{ me { email } }")
    assert body["data"] == {"me": None}
    assert [e["extensions"]["code"] for e in body["errors"]] == ["UNAUTHENTICATED"]

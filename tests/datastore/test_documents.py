"""Persisted GraphQL documents in DynamoDB: stored by hash under their own scope, with a TTL."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from datastore import documents, keys
from datastore.errors import InvalidInput, ScopeViolation
from datastore.scope import DocumentScope, TenantScope
from datastore.table import Table
from tests.conftest import Tenant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture
def store(client: DynamoDBClient, table_name: str) -> Table:
    return Table(client, table_name, DocumentScope())


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_put_then_get__the_same_text(store: Table) -> None:
    text = "query Stored { me { email } }"
    assert documents.get_document(store, digest(text)) is None
    documents.put_document(store, digest(text), text, datetime(2026, 1, 1, tzinfo=UTC))
    assert documents.get_document(store, digest(text)) == text


def test_put__sets_the_ttl_attribute(store: Table, client: DynamoDBClient, table_name: str) -> None:
    text = "query Ttl { __typename }"
    at = datetime(2026, 1, 1, tzinfo=UTC)
    documents.put_document(store, digest(text), text, at)
    item = client.get_item(TableName=table_name, Key=keys.persisted_document_key(digest(text)).wire())["Item"]
    assert int(item["expiresAt"]["N"]) == int((at + documents.DOCUMENT_TTL).timestamp())
    assert item["PK"]["S"] == f"PQ#{digest(text)}"


@pytest.mark.parametrize("bad", ["", "abc", "A" * 64, "g" * 64, "0" * 63])
def test_key__not_a_sha256__invalid_input(store: Table, bad: str) -> None:
    with pytest.raises(InvalidInput):
        documents.get_document(store, bad)


def test_tenant_scope__cannot_read_documents(tenant: Tenant, store: Table) -> None:
    text = "query Scoped { __typename }"
    documents.put_document(store, digest(text), text, datetime(2026, 1, 1, tzinfo=UTC))
    with pytest.raises(ScopeViolation):
        documents.get_document(tenant.table.with_scope(TenantScope(tenant.org_id)), digest(text))


def test_document_scope__cannot_read_tenant_data(tenant: Tenant, store: Table) -> None:
    with pytest.raises(ScopeViolation):
        store.get(keys.organization_key(tenant.org_id))

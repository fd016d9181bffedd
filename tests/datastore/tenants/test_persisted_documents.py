"""Persisted GraphQL documents in DynamoDB: one store per organisation, in slots, bounded, with a TTL."""

from __future__ import annotations

import hashlib
import itertools
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from datastore.aws.control_plane import make_client
from datastore.config import DatastoreSettings
from datastore.errors import InvalidInput, ScopeViolation
from datastore.kinds import layout
from datastore.kinds.layout import EXPIRES_AT
from datastore.table.scoped import Table
from datastore.tenancy import keys
from datastore.tenancy.scope import TenantScope
from datastore.tenants import persisted_documents
from tests.blocking import run, run_all
from tests.conftest import Tenant, TenantFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

AT = datetime(2026, 1, 1, tzinfo=UTC)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def store_of(tenant: Tenant) -> Table:
    return tenant.table.with_scope(TenantScope(tenant.org_id))


def test_put_then_get__the_same_text(tenant: Tenant) -> None:
    text = "query Stored { me { email } }"
    store = store_of(tenant)
    assert run(persisted_documents.get_document(store, tenant.org_id, digest(text))) is None
    run(persisted_documents.put_document(store, tenant.org_id, digest(text), text, AT))
    assert run(persisted_documents.get_document(store, tenant.org_id, digest(text))) == text


def test_put__in_the_organisations_space_with_the_ttl(tenant: Tenant, client: DynamoDBClient, table_name: str) -> None:
    text = "query Ttl { __typename }"
    run(persisted_documents.put_document(store_of(tenant), tenant.org_id, digest(text), text, AT))
    key = layout.PERSISTED_DOCUMENT.key_at(tenant.org_id, digest(text))
    item = client.get_item(TableName=table_name, Key=key.wire())["Item"]
    assert item["PK"]["S"] == f"ORG#{tenant.org_id}#PQ#{digest(text)[:3]}"
    assert keys.in_tenant(item["PK"]["S"], tenant.org_id)
    assert item["sha256"]["S"] == digest(text)
    assert int(item[EXPIRES_AT]["N"]) == int((AT + persisted_documents.DOCUMENT_TTL).timestamp())


@pytest.mark.parametrize("bad", ["", "abc", "A" * 64, "g" * 64, "0" * 63])
def test_key__not_a_sha256__invalid_input(tenant: Tenant, bad: str) -> None:
    with pytest.raises(InvalidInput):
        run(persisted_documents.get_document(store_of(tenant), tenant.org_id, bad))


def test_other_organisation__neither_reads_it_nor_finds_it(tenant: Tenant, make_tenant: TenantFactory) -> None:
    text = "query Mine { __typename }"
    run(persisted_documents.put_document(store_of(tenant), tenant.org_id, digest(text), text, AT))
    other = make_tenant()
    assert run(persisted_documents.get_document(store_of(other), other.org_id, digest(text))) is None
    with pytest.raises(ScopeViolation):
        run(persisted_documents.get_document(store_of(other), tenant.org_id, digest(text)))


def same_slot_texts() -> tuple[str, str]:
    """Two documents whose hashes share their first three hex digits (one slot)."""
    seen: dict[str, str] = {}
    for i in itertools.count():
        text = f"query Slot{i} {{ __typename }}"
        slot = digest(text)[: keys.DOCUMENT_SLOT_DIGITS]
        if slot in seen:
            return seen[slot], text
        seen[slot] = text
    raise AssertionError("unreachable")


def test_slot__taken_by_another_document__the_first_is_gone_never_answered_for(tenant: Tenant) -> None:
    """At most 4,096 documents an organisation: a slot holds one, and checks its hash."""
    first, second = same_slot_texts()
    store = store_of(tenant)
    run(persisted_documents.put_document(store, tenant.org_id, digest(first), first, AT))
    run(persisted_documents.put_document(store, tenant.org_id, digest(second), second, AT))
    assert run(persisted_documents.get_document(store, tenant.org_id, digest(first))) is None
    assert run(persisted_documents.get_document(store, tenant.org_id, digest(second))) == second
    assert 16**keys.DOCUMENT_SLOT_DIGITS == 4096


def test_size__at_the_bound_stored_one_byte_more_refused(tenant: Tenant) -> None:
    store = store_of(tenant)
    at_bound = "{ __typename }" + " " * (persisted_documents.MAX_DOCUMENT_BYTES - len("{ __typename }"))
    run(persisted_documents.put_document(store, tenant.org_id, digest(at_bound), at_bound, AT))
    assert run(persisted_documents.get_document(store, tenant.org_id, digest(at_bound))) == at_bound
    past = at_bound + " "
    with pytest.raises(InvalidInput, match="at most 16384 bytes"):
        run(persisted_documents.put_document(store, tenant.org_id, digest(past), past, AT))
    multibyte = (
        "# " + "é" * (persisted_documents.MAX_DOCUMENT_BYTES // 2) + "\n{ __typename }"
    )  # under the bound in characters
    assert not persisted_documents.fits(multibyte)


def test_old_layout__pq_item__read_by_nothing_and_gone_within_the_ttl(
    tenant: Tenant, client: DynamoDBClient, table_name: str, settings: DatastoreSettings
) -> None:
    """A document as releases before this layout stored it (``PQ#<sha256>``, outside every
    organisation): no scope reads it, the organisation does not find it (its client
    registers it again), and the TTL the old release set deletes it within 30 days."""
    # The old release's own client: the key guard checks this release's requests only.
    old_release = make_client(settings)
    text = "query Old { __typename }"
    written = datetime.now(UTC)
    old_key = {"PK": {"S": f"PQ#{digest(text)}"}, "SK": {"S": "#DOCUMENT"}}
    old_release.put_item(
        TableName=table_name,
        Item={
            **old_key,
            "entity": {"S": "PersistedDocument"},
            "document": {"S": text},
            EXPIRES_AT: {"N": str(int((written + timedelta(days=30)).timestamp()))},
        },
    )
    store = store_of(tenant)
    assert run(persisted_documents.get_document(store, tenant.org_id, digest(text))) is None
    with pytest.raises(ScopeViolation):
        run(store.get(keys.Key(old_key["PK"]["S"], old_key["SK"]["S"])))
    expires = int(old_release.get_item(TableName=table_name, Key=old_key)["Item"][EXPIRES_AT]["N"])
    assert expires <= (written + persisted_documents.DOCUMENT_TTL).timestamp()
    description = client.describe_time_to_live(TableName=table_name)["TimeToLiveDescription"]
    assert description.get("AttributeName") == EXPIRES_AT


def test_list_documents__every_live_document_of_the_organisation_and_no_other(make_tenant: TenantFactory) -> None:
    tenant, other = make_tenant(), make_tenant()
    store = store_of(tenant)
    now = datetime.now(UTC)
    texts = [f"query Listed{n} {{ __typename }}" for n in range(3)]
    for n, text in enumerate(texts):
        run(persisted_documents.put_document(store, tenant.org_id, digest(text), text, now - timedelta(days=n)))
    expired = "query Expired { __typename }"
    run(
        persisted_documents.put_document(
            store, tenant.org_id, digest(expired), expired, now - persisted_documents.DOCUMENT_TTL - timedelta(1)
        )
    )
    run(
        persisted_documents.put_document(
            store_of(other), other.org_id, digest("query Theirs { __typename }"), "query Theirs", now
        )
    )
    listed = {
        found.document: persisted_documents.registered_at(found)
        for found in run_all(persisted_documents.list_documents(store, tenant.org_id))
    }
    assert sorted(listed) == sorted(texts)
    assert listed[texts[2]].date() == (now - timedelta(days=2)).date()

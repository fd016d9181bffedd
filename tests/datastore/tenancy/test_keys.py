"""keys: the key vocabulary the scopes, the key guard and the IAM policies check against."""

from __future__ import annotations

from datastore.kinds import layout
from datastore.tenancy import keys
from datastore.tenancy.scope import TenantScope
from datastore.values.ids import OrgId
from tests.key_guard import org_id_of

ORG = "01HZX3V7Q4M2N8P5R6S7T8V9W0"
OTHER_ORG = "01HZX3V7Q4M2N8P5R6S7T8V9W1"
DEPT = "01HZX3V7Q4M2N8P5R6S7T8V9W2"
EMP = "01HZX3V7Q4M2N8P5R6S7T8V9W3"
JOB = "01HZX3V7Q4M2N8P5R6S7T8V9W4"
APP = "01HZX3V7Q4M2N8P5R6S7T8V9W5"


def test_domain_key__own_partition_outside_every_tenant() -> None:
    key = layout.EMAIL_DOMAIN.key_at("acme.co")
    assert key == keys.Key("DOMAIN#acme.co", "#DOMAIN")
    assert keys.is_domain_pk(key.pk) and not keys.is_identity_pk(key.pk)
    assert org_id_of(key.pk) is None


def test_in_tenant__org_id_that_prefixes_another__is_not_the_same_tenant() -> None:
    assert not keys.in_tenant("ORG#ABCD", "ABC")
    assert not keys.in_tenant("ORG#ABCD#DEPT#X", "ABC")
    assert keys.in_tenant("ORG#ABC#DEPT#X", "ABC")


def test_tenant_space__holds_what_in_tenant_says__a_tenant_scope_checks_with_it() -> None:
    """The space a TenantScope builds once checks exactly as ``in_tenant`` does."""
    space = keys.TenantSpace.of("ABC")
    scope = TenantScope(OrgId("ABC"))
    for partition_key in ("ORG#ABC", "ORG#ABC#DEPT#X", "ORG#ABCD", "ORG#ABCD#DEPT#X", "ORG#AB", "ORG#", "", "EMAIL#a"):
        assert space.holds(partition_key) == keys.in_tenant(partition_key, "ABC") == scope.may_read(partition_key)
    mine_or_not = [scope.may_read(pk) for pk in ("ORG#ABC", "ORG#ABC#X", "ORG#ABCD", "ORG#ABCD#X")]
    assert mine_or_not == [True, True, False, False]


def test_identity_and_platform_partitions__belong_to_no_tenant() -> None:
    identity = layout.IDENTITY.key_at("a@example.com").pk
    assert keys.is_identity_pk(identity)
    assert not keys.in_tenant(identity, ORG)
    assert org_id_of(identity) is None
    assert org_id_of(keys.ORGS_PK) is None
    assert not keys.is_identity_pk(keys.org_pk(ORG))


def test_start_key_partition__table_or_index() -> None:
    start = {"PK": "ORG#A", "SK": "EMP#B", "GSI1PK": "ORG#A#EMP", "GSI1SK": "x"}
    assert keys.start_key_partition(start, None) == "ORG#A"
    assert keys.start_key_partition(start, keys.GSI1) == "ORG#A#EMP"


def test_key_wire__is_dynamodb_format() -> None:
    assert keys.Key("P", "S").wire() == {"PK": {"S": "P"}, "SK": {"S": "S"}}

"""Every declared kind is classified for export, erasure and offboarding, and reached by a walk."""

from __future__ import annotations

from datastore.kinds import layout
from datastore.lifecycle import export, kinds, walk
from datastore.lifecycle.kinds import Erasure, Export, Offboarding
from tests.datastore.lifecycle.complete import KINDS_WRITTEN

# Kinds an organisation owns: exported, or deleted or released when it leaves.
OWNED = {
    kind.tag
    for kind in layout.KINDS
    if kind.tag in kinds.POLICIES
    and (
        kinds.POLICIES[kind.tag].export in (Export.INCLUDED, Export.SECRET, Export.CACHE, Export.SIGN_IN)
        or kinds.POLICIES[kind.tag].offboarding in (Offboarding.DELETE, Offboarding.RELEASE)
    )
    and kinds.POLICIES[kind.tag].export is not Export.INLINE
    # Named by nothing the organisation holds: left to the table's TTL (test below).
    and kinds.POLICIES[kind.tag].offboarding is not Offboarding.EXPIRE
}


def test_every_declared_kind__has_a_row() -> None:
    assert kinds.unclassified() == [], "classify these kinds in datastore/lifecycle/kinds.py"


def test_every_row__names_a_declared_kind() -> None:
    assert set(kinds.POLICIES) <= {kind.tag for kind in layout.KINDS}


def test_every_owned_kind__has_its_partition_in_a_walk_family() -> None:
    templates = {family.template for family in walk.FAMILIES}
    for kind in layout.KINDS:
        if kind.tag in OWNED:
            assert kind.key is not None
            assert kind.key[0] in templates, f"{kind.tag}: no walk family reaches {kind.key[0]!r}"


def test_export_families__reach_every_exported_kind() -> None:
    templates = {family.template for family in export.FAMILIES}
    for kind in kinds.kinds_where(export=Export.INCLUDED):
        assert kind.key is not None and kind.key[0] in templates, kind.tag


def test_export_families__read_no_credential_and_no_cache() -> None:
    withheld = [
        *kinds.kinds_where(export=Export.SECRET),
        *kinds.kinds_where(export=Export.CACHE),
        *kinds.kinds_where(export=Export.SIGN_IN),
    ]
    templates = {family.template for family in export.FAMILIES}
    for kind in withheld:
        assert kind.key is not None and kind.key[0] not in templates, kind.tag


def test_personal_kinds__are_erased_somehow() -> None:
    for tag, policy in kinds.POLICIES.items():
        if policy.personal:
            assert policy.erasure in (Erasure.TOMBSTONE, Erasure.DELETE, Erasure.REDACT), tag


def test_the_complete_tenant__writes_every_owned_kind() -> None:
    missing = OWNED - KINDS_WRITTEN
    assert not missing, f"add a write of {sorted(missing)} to tests/datastore/lifecycle/complete.py"


def test_kinds_left_to_expire__carry_the_tables_ttl_attribute() -> None:
    """An offboarding cannot reach them: only DynamoDB's TTL ever deletes them."""
    expiring = kinds.kinds_where(offboarding=Offboarding.EXPIRE)
    assert expiring, "no kind is left to expire: drop Offboarding.EXPIRE"
    for kind in expiring:
        assert layout.EXPIRES_AT in {attribute.name for attribute in kind.attributes}, kind.tag

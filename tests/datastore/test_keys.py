from __future__ import annotations

import pytest

from datastore import keys

ORG = "01HZX3V7Q4M2N8P5R6S7T8V9W0"
OTHER_ORG = "01HZX3V7Q4M2N8P5R6S7T8V9W1"
DEPT = "01HZX3V7Q4M2N8P5R6S7T8V9W2"
EMP = "01HZX3V7Q4M2N8P5R6S7T8V9W3"
JOB = "01HZX3V7Q4M2N8P5R6S7T8V9W4"
APP = "01HZX3V7Q4M2N8P5R6S7T8V9W5"


def test_domain_key__own_partition_outside_every_tenant() -> None:
    key = keys.domain_key("acme.co")
    assert key == keys.Key("DOMAIN#acme.co", "#DOMAIN")
    assert keys.is_domain_pk(key.pk) and not keys.is_identity_pk(key.pk)
    assert keys.org_id_of(key.pk) is None


def test_tenant_keys__every_partition_starts_with_the_org() -> None:
    tenant_keys = [
        keys.organization_key(ORG),
        keys.subscription_key(ORG),
        keys.department_key(ORG, DEPT),
        keys.employee_key(ORG, EMP),
        keys.email_pointer_key(ORG, "a@example.com"),
        keys.membership_key(ORG, DEPT, EMP),
        keys.job_key(ORG, JOB),
        keys.application_key(ORG, JOB, APP),
        keys.applicant_key(ORG, JOB, EMP),
        keys.name_entry_key(ORG, "", "lee", "ann", EMP),
        keys.name_entry_key(ORG, "le", "lee", "ann", EMP),
    ]
    index_partitions = [
        keys.open_jobs_gsi_pk(ORG),
        keys.employees_gsi_pk(ORG),
        keys.employee_applications_gsi_pk(ORG, EMP),
    ]
    for partition in [key.pk for key in tenant_keys] + index_partitions:
        assert partition.startswith(f"ORG#{ORG}")
        assert keys.in_tenant(partition, ORG)
        assert not keys.in_tenant(partition, OTHER_ORG)
        assert keys.org_id_of(partition) == ORG


def test_layout__matches_the_documented_keys() -> None:
    assert keys.organization_key(ORG) == keys.Key(f"ORG#{ORG}", "#METADATA")
    assert keys.subscription_key(ORG) == keys.Key(f"ORG#{ORG}", "#SUBSCRIPTION")
    assert keys.department_key(ORG, DEPT) == keys.Key(f"ORG#{ORG}", f"DEPT#{DEPT}")
    assert keys.employee_key(ORG, EMP) == keys.Key(f"ORG#{ORG}", f"EMP#{EMP}")
    assert keys.membership_key(ORG, DEPT, EMP) == keys.Key(f"ORG#{ORG}#DEPT#{DEPT}", f"EMP#{EMP}")
    assert keys.identity_key("a@example.com") == keys.Key("EMAIL#a@example.com", "#IDENTITY")
    assert keys.job_key(ORG, JOB) == keys.Key(f"ORG#{ORG}", f"JOB#{JOB}")
    assert keys.application_key(ORG, JOB, APP) == keys.Key(f"ORG#{ORG}#JOB#{JOB}", f"APP#{APP}")
    assert keys.open_jobs_gsi_pk(ORG) == f"ORG#{ORG}#OPEN"
    assert keys.open_jobs_gsi_sk("2024-01-01T00:00:00.000Z", JOB) == f"JOB#2024-01-01T00:00:00.000Z#{JOB}"
    assert keys.name_entry_key(ORG, "an", "lee", "ann", EMP) == keys.Key(f"ORG#{ORG}#NAME#an", f"lee\x01ann\x01{EMP}")
    assert keys.name_pk(ORG, "") == f"ORG#{ORG}#NAME#"


def test_name_sk__shorter_name_and_then_first_name__sort_first() -> None:
    # "ng" < "ng li" < "nga" by last name; the separator sorts below a space and every letter.
    ordered = [
        keys.name_sk("ng", "zoe", EMP),
        keys.name_sk("ng li", "ann", EMP),
        keys.name_sk("nga", "ann", EMP),
    ]
    assert sorted(ordered) == ordered
    assert sorted([keys.name_sk("lee", "bo", EMP), keys.name_sk("lee", "ann", EMP)])[0].startswith("lee\x01ann")


def test_in_tenant__org_id_that_prefixes_another__is_not_the_same_tenant() -> None:
    assert not keys.in_tenant("ORG#ABCD", "ABC")
    assert not keys.in_tenant("ORG#ABCD#DEPT#X", "ABC")
    assert keys.in_tenant("ORG#ABC#DEPT#X", "ABC")


def test_identity_and_platform_partitions__belong_to_no_tenant() -> None:
    identity = keys.identity_key("a@example.com").pk
    assert keys.is_identity_pk(identity)
    assert not keys.in_tenant(identity, ORG)
    assert keys.org_id_of(identity) is None
    assert keys.org_id_of(keys.ORGS_PK) is None
    assert not keys.is_identity_pk(keys.org_pk(ORG))


def test_org_header_prefix__matches_only_the_organisation_items() -> None:
    prefix = keys.ORG_HEADER_PREFIX
    assert keys.organization_key(ORG).sk.startswith(prefix)
    assert keys.subscription_key(ORG).sk.startswith(prefix)
    others = [
        keys.department_key(ORG, DEPT),
        keys.employee_key(ORG, EMP),
        keys.email_pointer_key(ORG, "a@example.com"),
        keys.job_key(ORG, JOB),
    ]
    assert not any(key.sk.startswith(prefix) for key in others)


def test_sort_key_prefixes__match_their_entities_only() -> None:
    assert keys.department_key(ORG, DEPT).sk.startswith(keys.department_sk_prefix())
    assert keys.employee_key(ORG, EMP).sk.startswith(keys.employee_sk_prefix())
    assert keys.job_key(ORG, JOB).sk.startswith(keys.job_sk_prefix())
    assert keys.application_key(ORG, JOB, APP).sk.startswith(keys.application_sk_prefix())
    # The applicant marker shares the job partition but not the application prefix.
    assert not keys.applicant_key(ORG, JOB, EMP).sk.startswith(keys.application_sk_prefix())
    # The email pointer shares the org partition but not the employee prefix.
    assert not keys.email_pointer_key(ORG, "e@example.com").sk.startswith(keys.employee_sk_prefix())


def test_id_after__parses_and_rejects() -> None:
    assert keys.id_after(keys.EMP, f"EMP#{EMP}") == EMP
    with pytest.raises(ValueError):
        keys.id_after(keys.EMP, f"DEPT#{DEPT}")
    with pytest.raises(ValueError):
        keys.id_after(keys.EMP, "EMP#")


def test_start_key_partition__table_or_index() -> None:
    start = {"PK": "ORG#A", "SK": "EMP#B", "GSI1PK": "ORG#A#EMP", "GSI1SK": "x"}
    assert keys.start_key_partition(start, None) == "ORG#A"
    assert keys.start_key_partition(start, keys.GSI1) == "ORG#A#EMP"


def test_key_wire__is_dynamodb_format() -> None:
    assert keys.Key("P", "S").wire() == {"PK": {"S": "P"}, "SK": {"S": "S"}}


def test_open_jobs_sort_key__orders_by_posting_time() -> None:
    earlier = keys.open_jobs_gsi_sk("2024-01-01T00:00:00.000Z", "01ZZZZZZZZZZZZZZZZZZZZZZZZ")
    later = keys.open_jobs_gsi_sk("2024-01-01T00:00:00.001Z", "01000000000000000000000000")
    assert earlier < later

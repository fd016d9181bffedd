"""The roles' LeadingKeys policies (datastore/aws/iam.py): who may touch the data-layout items."""

from __future__ import annotations

from datastore.aws import iam
from datastore.tenancy import keys

TABLE = "arn:aws:dynamodb:eu-west-1:123456789012:table/hr-api"


def test_policies__layout_item__platform_role_reads_and_writes_it__the_lifecycle_role_only_reads_it() -> None:
    documents = iam.policies(TABLE)
    [layout] = [statement for statement in documents["Platform"]["Statement"] if statement["Sid"] == "DataLayout"]
    assert layout["Action"] == ["dynamodb:GetItem", "dynamodb:PutItem"]
    assert layout["Resource"] == [TABLE]
    assert layout["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [keys.LAYOUT_PK]}}
    [checked] = [
        statement
        for statement in documents["TenantLifecycle"]["Statement"]
        if statement["Sid"] == "LifecycleLayoutRead"
    ]
    # A restore checks its source's layout (the live table, or a table PITR restored).
    assert checked["Action"] == ["dynamodb:GetItem"]
    assert checked["Resource"] == [TABLE, f"{TABLE}-restored-*"]
    others = [
        statement
        for role, document in documents.items()
        for statement in document["Statement"]
        if statement not in (layout, checked)
    ]
    assert not any(
        pattern == keys.LAYOUT_PK or pattern.startswith(keys.LAYOUT_PK)
        for statement in others
        for pattern in statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    )


def test_policies__lifecycle_roles__bounded_by_the_org_tag__export_reads_only() -> None:
    documents = iam.policies(TABLE)
    tagged = "${aws:PrincipalTag/org}"
    for role in ("TenantExport", "TenantLifecycle"):
        for statement in documents[role]["Statement"]:
            for pattern in statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]:
                # In the tagged organisation's space, or a lookup item outside every tenant's.
                assert tagged in pattern or pattern in (
                    iam.IDENTITY_PARTITIONS,
                    iam.DOMAIN_PARTITIONS,
                    iam.API_KEY_PARTITIONS,
                    iam.ISSUER_PARTITIONS,
                    iam.LAYOUT_PARTITION,
                ), (role, pattern)
    export_actions = {action for statement in documents["TenantExport"]["Statement"] for action in statement["Action"]}
    assert export_actions == {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
    lookups = [
        pattern
        for statement in documents["TenantExport"]["Statement"]
        for pattern in statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    ]
    assert iam.API_KEY_PARTITIONS not in lookups and iam.REFRESH_PARTITIONS not in lookups  # credentials
    [records] = [s for s in documents["TenantLifecycle"]["Statement"] if s["Sid"] == "LifecycleRecords"]
    assert records["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == [f"LIFECYCLE#{tagged}"]

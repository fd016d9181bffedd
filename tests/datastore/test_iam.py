"""The roles' LeadingKeys policies (datastore/iam.py): who may touch the data-layout items."""

from __future__ import annotations

from datastore import iam, keys

TABLE = "arn:aws:dynamodb:eu-west-1:123456789012:table/hr-api"


def test_policies__layout_item__platform_role_reads_and_writes_it_and_no_other_role_does() -> None:
    documents = iam.policies(TABLE)
    [layout] = [statement for statement in documents["Platform"]["Statement"] if statement["Sid"] == "DataLayout"]
    assert layout["Action"] == ["dynamodb:GetItem", "dynamodb:PutItem"]
    assert layout["Resource"] == [TABLE]
    assert layout["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [keys.LAYOUT_PK]}}
    others = [
        statement
        for role, document in documents.items()
        for statement in document["Statement"]
        if role != "Platform" or statement["Sid"] != "DataLayout"
    ]
    assert not any(
        pattern == keys.LAYOUT_PK or pattern.startswith(keys.LAYOUT_PK)
        for statement in others
        for pattern in statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    )

"""The IAM policies that make tenant isolation hold in AWS too, not only in our code.

The data role's every read and write is bounded by ``dynamodb:LeadingKeys`` to the
partitions of the organisation named by the caller's session tag ``org``: the same rule the
datastore's TenantScope enforces (``datastore/scope.py``). The identity items (``EMAIL#``)
guard platform-wide email uniqueness, so tenants may write them but never read them; reading
them is the separate sign-in role's job. The platform role lists organisations on GSI1
(``ORGS``) and writes into one new organisation, named by its session tag ``provisioning``.
The persisted-documents role reads and registers GraphQL documents (``PQ#``, public query
text shared by every tenant; ``datastore/documents.py``) and nothing else.
"""

from __future__ import annotations

from typing import Any

TENANT_PARTITIONS = "ORG#${aws:PrincipalTag/org}*"
PROVISIONED_PARTITIONS = "ORG#${aws:PrincipalTag/provisioning}*"
IDENTITY_PARTITIONS = "EMAIL#*"
ORGS_PARTITION = "ORGS"
DOCUMENT_PARTITIONS = "PQ#*"

READS = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"]
WRITES = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"]
IDENTITY_WRITES = ["dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"]


def _statement(sid: str, actions: list[str], resources: list[str], leading_keys: list[str]) -> dict[str, Any]:
    return {
        "Sid": sid,
        "Effect": "Allow",
        "Action": actions,
        "Resource": resources,
        "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": leading_keys}},
    }


def policies(table_arn: str) -> dict[str, dict[str, Any]]:
    """One policy document per role: TenantData, SignIn, Platform, PersistedDocuments."""
    table_and_index = [table_arn, f"{table_arn}/index/GSI1"]
    return {
        "TenantData": {
            "Version": "2012-10-17",
            "Statement": [
                _statement("TenantPartitionsOnly", READS + WRITES, table_and_index, [TENANT_PARTITIONS]),
                _statement("IdentityWriteOnly", IDENTITY_WRITES, [table_arn], [IDENTITY_PARTITIONS]),
            ],
        },
        "SignIn": {
            "Version": "2012-10-17",
            "Statement": [
                _statement("IdentityRead", ["dynamodb:GetItem"], [table_arn], [IDENTITY_PARTITIONS]),
            ],
        },
        "Platform": {
            "Version": "2012-10-17",
            "Statement": [
                _statement("ListOrganizations", ["dynamodb:Query"], [f"{table_arn}/index/GSI1"], [ORGS_PARTITION]),
                _statement(
                    "ProvisionOneOrganization",
                    ["dynamodb:GetItem", "dynamodb:Query", *WRITES],
                    [table_arn],
                    [PROVISIONED_PARTITIONS],
                ),
                _statement("ProvisionIdentities", IDENTITY_WRITES, [table_arn], [IDENTITY_PARTITIONS]),
            ],
        },
        "PersistedDocuments": {
            "Version": "2012-10-17",
            "Statement": [
                _statement(
                    "DocumentsOnly", ["dynamodb:GetItem", "dynamodb:PutItem"], [table_arn], [DOCUMENT_PARTITIONS]
                ),
            ],
        },
    }

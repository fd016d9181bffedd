"""The IAM policies that make tenant isolation hold in AWS too, not only in our code.

The data role's every read and write is bounded by ``dynamodb:LeadingKeys`` to the
partitions of the organisation named by the caller's session tag ``org``: the same rule the
datastore's TenantScope enforces (``datastore/scope.py``). The identity items (``EMAIL#``)
guard platform-wide email uniqueness, so tenants may write them but never read them; reading
them is the separate sign-in role's job. The email domain markers (``DOMAIN#``) name the
organisation owning each domain: tenants may only ConditionCheck them (an employee's email
must be in an owned domain), and only the platform role writes them. The platform role lists
organisations on GSI1 (``ORGS``) and writes into one organisation being created or given a
domain, named by its session tag ``provisioning``.
"""

from __future__ import annotations

from typing import Any

TENANT_PARTITIONS = "ORG#${aws:PrincipalTag/org}*"
PROVISIONED_PARTITIONS = "ORG#${aws:PrincipalTag/provisioning}*"
IDENTITY_PARTITIONS = "EMAIL#*"
DOMAIN_PARTITIONS = "DOMAIN#*"
ORGS_PARTITION = "ORGS"

READS = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"]
WRITES = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"]
IDENTITY_WRITES = ["dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"]
DOMAIN_WRITES = ["dynamodb:PutItem", "dynamodb:ConditionCheckItem"]


def _statement(sid: str, actions: list[str], resources: list[str], leading_keys: list[str]) -> dict[str, Any]:
    return {
        "Sid": sid,
        "Effect": "Allow",
        "Action": actions,
        "Resource": resources,
        "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": leading_keys}},
    }


def policies(table_arn: str) -> dict[str, dict[str, Any]]:
    """One policy document per role: TenantData, SignIn, Platform."""
    table_and_index = [table_arn, f"{table_arn}/index/GSI1"]
    return {
        "TenantData": {
            "Version": "2012-10-17",
            "Statement": [
                _statement("TenantPartitionsOnly", READS + WRITES, table_and_index, [TENANT_PARTITIONS]),
                _statement("IdentityWriteOnly", IDENTITY_WRITES, [table_arn], [IDENTITY_PARTITIONS]),
                _statement("DomainCheckOnly", ["dynamodb:ConditionCheckItem"], [table_arn], [DOMAIN_PARTITIONS]),
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
                _statement("ProvisionDomains", DOMAIN_WRITES, [table_arn], [DOMAIN_PARTITIONS]),
            ],
        },
    }

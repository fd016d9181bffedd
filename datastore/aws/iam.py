"""The IAM policies that make tenant isolation hold in AWS too, not only in our code.

The data role's every read and write is bounded by ``dynamodb:LeadingKeys`` to the
partitions of the organisation named by the caller's session tag ``org``: the same rule the
datastore's TenantScope enforces (``datastore/tenancy/scope.py``). The identity items (``EMAIL#``)
guard platform-wide email uniqueness, so tenants may write them but never read them; reading
them is the separate sign-in role's job. The email domain markers (``DOMAIN#``) name the
organisation owning each domain: tenants may only ConditionCheck them (an employee's email
must be in an owned domain), and only the platform role writes them. The platform role lists
organisations on GSI1 (``ORGS``) and writes into one organisation being created or given a
domain, named by its session tag ``provisioning``, and reads and writes the table's
data-layout items (``LAYOUT``: the version the server reads at start-up, and the progress of
``server.py migrate``), and a server instance's stream reader's lease and checkpoints
(``FEED#<group>``, datastore/feed/).
API key lookup items (``APIKEY#<sha256>``) are written by tenants when an admin creates or
revokes a key (never read by them), and read by the sign-in role, which authenticates a
bearer key with one GetItem (``datastore/signin/api_keys.py``). Identity provider clients
(``ISSUER#<issuer>``) are written by tenants (an admin registering the organisation's
provider) and the platform role (the operator, at onboarding), and refresh token lookup items
(``REFRESH#<sha256>``) by tenants (signing in and refreshing, in the tenant's session
transactions); neither is read by them: the sign-in role reads both, and the domain markers,
with one GetItem each (``datastore/signin/identity_providers.py``, ``datastore/signin/sessions.py``).
On AWS, a WebSocket connection's lookup item (``WSCONN#<connectionId>``, naming its
organisation) is written and deleted by tenants (in the transactions that open and end the
connection) and read by the sign-in role (``datastore/tenants/live_connections.py``).
The lifecycle of one organisation (datastore/lifecycle/) has two roles of its own, bounded by
the same ``org`` tag. TenantExport only reads: the organisation's partitions, and the items
outside them an export holds (identities, domain markers, identity provider clients, by
GetItem and BatchGetItem; never an API key lookup). TenantLifecycle restores and offboards:
it reads and writes (BatchWriteItem too) the organisation's partitions, reads, writes and
deletes the items outside them that name it (identities, domain markers, API key lookups,
identity provider clients; the code writes each on the condition that it names the
organisation, since a key outside the tenant's space says nothing of whose it is), its
lifecycle records (``LIFECYCLE#<org>`` exactly: restores, its deletion receipts) and reads the
layout version; a restore from another table (``--from-table``, a point-in-time recovery)
reads it under the same bounds, so the role may read tables named ``<table>-restored-*``.
Persisted GraphQL documents live in each organisation's own partitions
(``ORG#<org>#PQ#<slot>``, ``datastore/tenants/persisted_documents.py``), so the data role's LeadingKeys cover
them and no role of their own is needed.

Partition patterns come from the key prefixes in ``keys.py``, so a change of layout changes
the policies with it. ARNs are passed in: strings for ``server.py iam-policy``, CloudFormation
intrinsics for the template (``deploy/cloudformation.py``).
"""

from __future__ import annotations

from typing import Any, Final

from datastore.tenancy import keys

# Session tags the server sets when it assumes a role (datastore/aws/credentials.py).
ORG_TAG: Final = "org"
PROVISIONING_TAG: Final = "provisioning"

TENANT_PARTITIONS: Final = f"{keys.ORG}{keys.SEP}${{aws:PrincipalTag/{ORG_TAG}}}*"
PROVISIONED_PARTITIONS: Final = f"{keys.ORG}{keys.SEP}${{aws:PrincipalTag/{PROVISIONING_TAG}}}*"
IDENTITY_PARTITIONS: Final = f"{keys.EMAIL}{keys.SEP}*"
DOMAIN_PARTITIONS: Final = f"{keys.DOMAIN}{keys.SEP}*"
ORGS_PARTITION: Final = keys.ORGS_PK
API_KEY_PARTITIONS: Final = f"{keys.APIKEY}{keys.SEP}*"
ISSUER_PARTITIONS: Final = f"{keys.ISSUER}{keys.SEP}*"
REFRESH_PARTITIONS: Final = f"{keys.REFRESH}{keys.SEP}*"
LAYOUT_PARTITION: Final = keys.LAYOUT_PK
FEED_PARTITIONS: Final = f"{keys.FEED}{keys.SEP}*"
WS_CONNECTION_PARTITIONS: Final = f"{keys.WSCONN}{keys.SEP}*"
WS_CONNECTION_WRITES: Final = ["dynamodb:PutItem", "dynamodb:DeleteItem"]
FEED_ITEMS: Final = [
    "dynamodb:GetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
]
# Exactly the tagged organisation's lifecycle records (no wildcard: LIFECYCLE#<org> only).
LIFECYCLE_PARTITION: Final = f"{keys.LIFECYCLE}{keys.SEP}${{aws:PrincipalTag/{ORG_TAG}}}"
# Where a point-in-time recovery of the table is restored to, for ``restore --from-table``.
RESTORED_TABLES_SUFFIX: Final = "-restored-*"

READS: Final = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"]
WRITES: Final = ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"]
IDENTITY_WRITES: Final = ["dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"]
DOMAIN_WRITES: Final = ["dynamodb:PutItem", "dynamodb:ConditionCheckItem"]
API_KEY_WRITES: Final = ["dynamodb:PutItem", "dynamodb:UpdateItem"]
ISSUER_WRITES: Final = ["dynamodb:PutItem", "dynamodb:DeleteItem"]
REFRESH_WRITES: Final = ["dynamodb:PutItem"]
LOOKUP_READS: Final = ["dynamodb:GetItem", "dynamodb:BatchGetItem"]
BATCH_WRITES: Final = ["dynamodb:BatchWriteItem"]

ROLES: Final = ("TenantData", "SignIn", "Platform", "TenantExport", "TenantLifecycle")


def _statement(sid: str, actions: list[str], resources: list[Any], leading_keys: list[str]) -> dict[str, Any]:
    return {
        "Sid": sid,
        "Effect": "Allow",
        "Action": actions,
        "Resource": resources,
        "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": leading_keys}},
    }


def policies(
    table_arn: Any, index_arn: Any | None = None, restored_arn: Any | None = None
) -> dict[str, dict[str, Any]]:
    """One policy document per role: TenantData, SignIn, Platform, TenantExport, TenantLifecycle.

    ``index_arn`` defaults to ``<table_arn>/index/GSI1`` and ``restored_arn`` (the tables a
    restore may read its source from) to ``<table_arn>-restored-*``; pass them when
    ``table_arn`` is not a string (a CloudFormation ``Fn::GetAtt``).
    """
    index = index_arn if index_arn is not None else f"{table_arn}/index/{keys.GSI1}"
    restored = restored_arn if restored_arn is not None else f"{table_arn}{RESTORED_TABLES_SUFFIX}"
    table_and_index = [table_arn, index]
    outside_export = [IDENTITY_PARTITIONS, DOMAIN_PARTITIONS, ISSUER_PARTITIONS]
    outside_lifecycle = [IDENTITY_PARTITIONS, DOMAIN_PARTITIONS, API_KEY_PARTITIONS, ISSUER_PARTITIONS]
    return {
        "TenantData": {
            "Version": "2012-10-17",
            "Statement": [
                _statement("TenantPartitionsOnly", READS + WRITES, table_and_index, [TENANT_PARTITIONS]),
                _statement("IdentityWriteOnly", IDENTITY_WRITES, [table_arn], [IDENTITY_PARTITIONS]),
                _statement("DomainCheckOnly", ["dynamodb:ConditionCheckItem"], [table_arn], [DOMAIN_PARTITIONS]),
                _statement("ApiKeyWriteOnly", API_KEY_WRITES, [table_arn], [API_KEY_PARTITIONS]),
                _statement("IssuerWriteOnly", ISSUER_WRITES, [table_arn], [ISSUER_PARTITIONS]),
                _statement("RefreshTokenWriteOnly", REFRESH_WRITES, [table_arn], [REFRESH_PARTITIONS]),
                _statement(
                    "WebSocketConnectionWriteOnly", WS_CONNECTION_WRITES, [table_arn], [WS_CONNECTION_PARTITIONS]
                ),
            ],
        },
        "SignIn": {
            "Version": "2012-10-17",
            "Statement": [
                _statement("IdentityRead", ["dynamodb:GetItem"], [table_arn], [IDENTITY_PARTITIONS]),
                _statement("ApiKeyRead", ["dynamodb:GetItem"], [table_arn], [API_KEY_PARTITIONS]),
                _statement("IssuerRead", ["dynamodb:GetItem"], [table_arn], [ISSUER_PARTITIONS]),
                _statement("RefreshTokenRead", ["dynamodb:GetItem"], [table_arn], [REFRESH_PARTITIONS]),
                _statement("DomainRead", ["dynamodb:GetItem"], [table_arn], [DOMAIN_PARTITIONS]),
                _statement("WebSocketConnectionRead", ["dynamodb:GetItem"], [table_arn], [WS_CONNECTION_PARTITIONS]),
            ],
        },
        "Platform": {
            "Version": "2012-10-17",
            "Statement": [
                _statement("ListOrganizations", ["dynamodb:Query"], [index], [ORGS_PARTITION]),
                _statement("WebhookOrganizations", ["dynamodb:Query"], [index], [keys.WEBHOOKS_PK]),
                _statement(
                    "ProvisionOneOrganization",
                    ["dynamodb:GetItem", "dynamodb:Query", *WRITES],
                    [table_arn],
                    [PROVISIONED_PARTITIONS],
                ),
                _statement("ProvisionIdentities", IDENTITY_WRITES, [table_arn], [IDENTITY_PARTITIONS]),
                _statement("ProvisionDomains", DOMAIN_WRITES, [table_arn], [DOMAIN_PARTITIONS]),
                _statement("ProvisionIssuers", ISSUER_WRITES, [table_arn], [ISSUER_PARTITIONS]),
                _statement("DataLayout", ["dynamodb:GetItem", "dynamodb:PutItem"], [table_arn], [LAYOUT_PARTITION]),
                _statement("StreamReader", FEED_ITEMS, [table_arn], [FEED_PARTITIONS]),
            ],
        },
        "TenantExport": {
            "Version": "2012-10-17",
            "Statement": [
                _statement("ExportTenantPartitions", READS, table_and_index, [TENANT_PARTITIONS]),
                _statement("ExportLookups", LOOKUP_READS, [table_arn], outside_export),
            ],
        },
        "TenantLifecycle": {
            "Version": "2012-10-17",
            "Statement": [
                _statement(
                    "LifecycleTenantPartitions", READS + WRITES + BATCH_WRITES, table_and_index, [TENANT_PARTITIONS]
                ),
                _statement(
                    "LifecycleLookups",
                    [*LOOKUP_READS, "dynamodb:PutItem", "dynamodb:DeleteItem"],
                    [table_arn],
                    outside_lifecycle,
                ),
                _statement(
                    "LifecycleRecords", ["dynamodb:GetItem", "dynamodb:PutItem"], [table_arn], [LIFECYCLE_PARTITION]
                ),
                _statement("LifecycleLayoutRead", ["dynamodb:GetItem"], [table_arn, restored], [LAYOUT_PARTITION]),
                _statement("RestoreSourceRead", READS, [restored], [TENANT_PARTITIONS, *outside_export]),
            ],
        },
    }

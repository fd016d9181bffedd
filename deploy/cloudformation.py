"""The CloudFormation template of the whole service, built from the code's own definitions.

The table comes from ``datastore.upkeep.provision`` (the definition the server creates locally), the
role policies from ``datastore.aws.iam`` (what ``server.py iam-policy`` prints), so the deployed
table and its IAM boundary cannot drift from what the code and its tests assume.

What it creates:
- the table: on-demand, point-in-time recovery, TTL on `expiresAt` (idempotency records, audit events), deletion
  protection, encryption with a KMS key, and its stream (both images) for live updates;
- the five data roles (TenantData, SignIn, Platform, TenantExport, TenantLifecycle) with
  their ``LeadingKeys`` policies,
  each assumable only by the service role, with ``sts:TagSession`` for the ``org`` and
  ``provisioning`` tags;
- the service role the Lambda function runs as: it can describe the table (readiness) and
  assume the data roles, and read no item itself;
- live updates (graphql_api/subscriptions/gateway.py): an API Gateway WebSocket API whose
  ``$connect``, ``$default`` and ``$disconnect`` routes invoke one function (graphql-transport-ws),
  and a fan-out function on the table's stream (an event source mapping filtered to audit
  events and changes to a caller's standing, so other writes invoke nothing), each with a role
  of its own: both may assume the data roles and post to (and close) the WebSocket API's
  connections only (``execute-api:ManageConnections`` on that API), and only the fan-out's
  reads the stream, whose records carry every tenant's items;
- webhooks (docs/api/webhooks.md): a function on the table's stream (audit events only) writes
  the outbox and sends a message per due delivery to a standard SQS queue with a dead-letter
  queue (maxReceiveCount WEBHOOK_MAX_RECEIVE_COUNT); a function on the queue (batches of
  WEBHOOK_BATCH_SIZE, ReportBatchItemFailures, a visibility timeout six times its own) attempts
  them and sends each retry, delayed, or the object's next; an EventBridge schedule runs a sweep
  resending from the outbox what the queue lost. Each has a role of its own: sqs:SendMessage on
  that queue only, the stream read by the stream's function only, the queue read by its own;
- the API as one Lambda function (``graphql_api.entrypoints.lambda_handler.handler``, Mangum) behind an
  HTTP API, with reserved concurrency as a parameter; the token secret generated in Secrets
  Manager, which the function reads at start-up by its ARN (graphql_api/settings/secrets.py), so the
  secret is in no environment variable or parameter;
- the function's log group and the HTTP API's access-log group, encrypted with a KMS key of
  their own, all three kept when the stack is deleted (DeletionPolicy Retain);
- alarms to an SNS topic (with an optional email subscription), each over a window of
  ALARM_DATAPOINTS of ALARM_EVALUATION_PERIODS minutes rather than on one event: function
  errors and throttles, API 5xx, requests with UNAVAILABLE and with TIMEOUT, p95 latency (the
  last three from the EMF metrics of observability/emf.py, by the names it emits), DynamoDB's
  system errors and read and write throttling (table and index); and the webhooks': messages in
  the dead-letter queue, their functions' errors, the stream's lag, and the deliveries' errors
  (an EMF metric of graphql_api/webhooks/queue_delivery.py).
"""

from __future__ import annotations

import json
from typing import Any, Final

from datastore.aws import iam
from datastore.config import DEFAULT_TABLE_NAME
from datastore.kinds import layout
from datastore.tenancy import keys
from datastore.upkeep import provision
from graphql_api.execution.errors import Code
from graphql_api.observability import emf
from graphql_api.webhooks import queue_delivery

# Lambda's Python runtime; `make package` builds wheels for the same version and platform.
RUNTIME: Final = "python3.11"
HANDLER: Final = "graphql_api.entrypoints.lambda_handler.handler"
# Longer than the request deadline (REQUEST_TIMEOUT_SECONDS), so a request times out in our
# code, with a coded error, before Lambda kills it.
FUNCTION_TIMEOUT_SECONDS: Final = 15

# Live updates on AWS (graphql_api/entrypoints/lambda_live.py): the WebSocket API's function
# and the stream's fan-out function.
LIVE_HANDLER: Final = "graphql_api.entrypoints.lambda_live.connection_handler"
FAN_OUT_HANDLER: Final = "graphql_api.entrypoints.lambda_live.stream_handler"
# A batch of stream records posts to every subscriber of its organisations: longer than a request.
FAN_OUT_TIMEOUT_SECONDS: Final = 60
# API Gateway's stage of the WebSocket API: its URL is wss://<api>.execute-api.<region>.amazonaws.com/live.
LIVE_STAGE: Final = "live"
# What the fan-out is invoked for (Lambda's event filtering, before any invocation): the
# organisations' audit events, and changes to a caller's standing (graphql_api/subscriptions/gateway.py).
FAN_OUT_FILTERS: Final = (
    {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["AuditEvent", "SignedOut"]}}}},
    {
        "eventName": ["MODIFY"],
        "dynamodb": {"NewImage": {"entity": {"S": ["Employee", "Organization", "ApiKey", "Session", "SignedOut"]}}},
    },
)
# The fan-out's oldest record, in milliseconds, past which live updates are late enough to alarm:
# a minute behind the table's stream (Lambda's IteratorAge, its Maximum over each minute).
FAN_OUT_MAX_AGE_MILLISECONDS: Final = 60_000
# Webhooks on AWS (graphql_api/entrypoints/lambda_webhooks.py, graphql_api/webhooks/queue_delivery.py):
# a function on the table's stream writes the outbox and sends a message per due delivery to a
# standard SQS queue; a function on the queue attempts them; a scheduled sweep resends what the
# queue lost. A standard queue, not FIFO: only it delays single messages (the retry schedule);
# the order per object is the outbox's (only an object's oldest pending delivery is attempted).
WEBHOOK_STREAM_HANDLER: Final = "graphql_api.entrypoints.lambda_webhooks.stream_handler"
WEBHOOK_QUEUE_HANDLER: Final = "graphql_api.entrypoints.lambda_webhooks.queue_handler"
WEBHOOK_SWEEP_HANDLER: Final = "graphql_api.entrypoints.lambda_webhooks.sweep_handler"
WEBHOOK_STREAM_FILTERS: Final = (
    {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["AuditEvent"]}}}},
)
# A batch's attempts run at once, each 15 s at most, then its record and the next message.
WEBHOOK_QUEUE_TIMEOUT_SECONDS: Final = 45
WEBHOOK_BATCH_SIZE: Final = 5
# AWS's advice for a queue feeding a function: a visibility timeout of six times its timeout.
WEBHOOK_VISIBILITY_TIMEOUT_SECONDS: Final = 6 * WEBHOOK_QUEUE_TIMEOUT_SECONDS
# Receives of a message whose calls kept failing before it goes to the dead-letter queue.
WEBHOOK_MAX_RECEIVE_COUNT: Final = 5
# The longest a message may legitimately still be in the queue: past it the sweep resends.
WEBHOOK_LOST_AFTER_SECONDS: Final = WEBHOOK_VISIBILITY_TIMEOUT_SECONDS * WEBHOOK_MAX_RECEIVE_COUNT
WEBHOOK_SWEEP_SCHEDULE: Final = "rate(5 minutes)"
WEBHOOK_SWEEP_TIMEOUT_SECONDS: Final = 300
# Consumers at once (the queue's event source's bound): what a burst may cost the endpoints.
WEBHOOK_MAX_CONCURRENCY: Final = 10
# The Lambda roles the data roles trust: the API's, the two live functions' and the three webhooks'.
FUNCTION_ROLES: Final = (
    "ServiceRole",
    "LiveRole",
    "FanOutRole",
    "WebhookStreamRole",
    "WebhookQueueRole",
    "WebhookSweepRole",
)

ROLE_RESOURCES: Final = {
    "TenantData": "TenantDataRole",
    "SignIn": "SignInRole",
    "Platform": "PlatformRole",
    "TenantExport": "TenantExportRole",
    "TenantLifecycle": "TenantLifecycleRole",
}
# The environment variable that names each role to the server (datastore/aws/credentials.py).
ROLE_SETTINGS: Final = {
    "TenantData": "TENANT_ROLE_ARN",
    "SignIn": "SIGNIN_ROLE_ARN",
    "Platform": "PLATFORM_ROLE_ARN",
    "TenantExport": "EXPORT_ROLE_ARN",
    "TenantLifecycle": "LIFECYCLE_ROLE_ARN",
}

# The data-plane operations the server sends (datastore/table/scoped.py): DynamoDB reports
# SystemErrors per operation, so the alarm sums these (tests/deploy checks the list).
DATA_OPERATIONS: Final = (
    "GetItem",
    "BatchGetItem",
    "BatchWriteItem",
    "Query",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "TransactWriteItems",
)

# Every alarm looks at one-minute periods and fires when ALARM_DATAPOINTS of the last
# ALARM_EVALUATION_PERIODS breach: a sustained problem, not one event. (AWS recommends "M out
# of N" for EMF metrics from Lambda, whose log delivery it cannot time.) Missing data is not
# breaching: these metrics are sparse (an error count exists only in a minute with an error,
# latency only in a minute with traffic).
ALARM_PERIOD_SECONDS: Final = 60
ALARM_EVALUATION_PERIODS: Final = 5
ALARM_DATAPOINTS: Final = 3

TABLE_ARN: Final = {"Fn::GetAtt": ["Table", "Arn"]}
INDEX_ARN: Final = {"Fn::Sub": f"${{Table.Arn}}/index/{keys.GSI1}"}
RESTORED_ARN: Final = {"Fn::Sub": f"${{Table.Arn}}{iam.RESTORED_TABLES_SUFFIX}"}


def _ref(name: str) -> dict[str, str]:
    return {"Ref": name}


def table_properties(table_name: Any) -> dict[str, Any]:
    """The table as the server creates it, plus what only production needs."""
    definition = provision.table_definition(DEFAULT_TABLE_NAME)
    definition["TableName"] = table_name
    # CloudFormation names the view type alone: a specification is a stream that is on.
    definition["StreamSpecification"] = {"StreamViewType": provision.STREAM_VIEW_TYPE}
    return {
        **definition,
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "TimeToLiveSpecification": {"AttributeName": layout.EXPIRES_AT, "Enabled": True},
        "DeletionProtectionEnabled": True,
        "SSESpecification": {"SSEEnabled": True, "SSEType": "KMS"},
    }


def _data_role(role: str) -> dict[str, Any]:
    policy = iam.policies(TABLE_ARN, INDEX_ARN, RESTORED_ARN)[role]
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "Description": f"HR API {role}: DynamoDB access bounded by dynamodb:LeadingKeys",
            "MaxSessionDuration": 3600,
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": [{"Fn::GetAtt": [name, "Arn"]} for name in FUNCTION_ROLES]},
                        "Action": ["sts:AssumeRole", "sts:TagSession"],
                    }
                ],
            },
            "Policies": [{"PolicyName": f"{role}Items", "PolicyDocument": policy}],
        },
    }


def _service_role(
    description: str = "HR API Lambda function: logs, table health, and assuming the data roles only",
) -> dict[str, Any]:
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "Description": description,
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "lambda.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            },
            "ManagedPolicyArns": [
                {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"}
            ],
        },
    }


def _service_policy(roles: tuple[str, ...] = ("ServiceRole",)) -> dict[str, Any]:
    # A separate resource: the data roles trust the service role, so the service role's own
    # policy naming them would be a dependency cycle.
    return {
        "Type": "AWS::IAM::Policy",
        "Properties": {
            "PolicyName": "AssumeDataRoles",
            "Roles": [_ref(role) for role in roles],
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "AssumeDataRolesWithTags",
                        "Effect": "Allow",
                        "Action": ["sts:AssumeRole", "sts:TagSession"],
                        "Resource": [{"Fn::GetAtt": [name, "Arn"]} for name in ROLE_RESOURCES.values()],
                    },
                    {
                        "Sid": "Readiness",
                        "Effect": "Allow",
                        "Action": ["dynamodb:DescribeTable"],
                        "Resource": [TABLE_ARN],
                    },
                    {
                        "Sid": "ReadTokenSecret",
                        "Effect": "Allow",
                        "Action": ["secretsmanager:GetSecretValue"],
                        "Resource": [_ref("JwtSecret")],
                    },
                ],
            },
        },
    }


def _environment() -> dict[str, Any]:
    return {
        "HR_ENV": "production",
        # API Gateway answers only for the API's own domains, so any Host that reaches the function is one.
        "ALLOWED_HOSTS": "*",
        "DYNAMODB_ENDPOINT": "aws",
        "HR_TABLE_NAME": _ref("Table"),
        # The secret's ARN, not the secret: read at start-up (graphql_api/settings/secrets.py).
        "JWT_SECRET_ARN": _ref("JwtSecret"),
        "OIDC_ISSUER": _ref("OidcIssuer"),
        "OIDC_AUDIENCE": _ref("OidcAudience"),
        "OIDC_JWKS": _ref("OidcJwks"),
        "CORS_ORIGINS": _ref("CorsOrigins"),
        "LOG_FORMAT": "json",
        # The queue's functions deliver webhooks: no dispatcher in the API's processes.
        "WEBHOOKS": "queue",
        "WEBHOOK_QUEUE_URL": _ref("WebhookQueue"),
        **{setting: {"Fn::GetAtt": [ROLE_RESOURCES[role], "Arn"]} for role, setting in ROLE_SETTINGS.items()},
    }


def _function() -> dict[str, Any]:
    environment = _environment()
    return {
        "Type": "AWS::Lambda::Function",
        "DependsOn": ["ServicePolicy"],
        "Properties": {
            "Description": "HR GraphQL API",
            "Runtime": RUNTIME,
            "Architectures": ["x86_64"],
            "Handler": HANDLER,
            "Code": {"S3Bucket": _ref("CodeBucket"), "S3Key": _ref("CodeKey")},
            "MemorySize": 1024,
            "Timeout": FUNCTION_TIMEOUT_SECONDS,
            "ReservedConcurrentExecutions": {
                "Fn::If": ["HasReservedConcurrency", _ref("ReservedConcurrency"), _ref("AWS::NoValue")]
            },
            "Role": {"Fn::GetAtt": ["ServiceRole", "Arn"]},
            "LoggingConfig": {"LogGroup": _ref("LogGroup"), "LogFormat": "Text"},
            "Environment": {"Variables": environment},
        },
    }


def _http_api() -> dict[str, Any]:
    return {
        "HttpApi": {
            "Type": "AWS::ApiGatewayV2::Api",
            "Properties": {"Name": {"Fn::Sub": "${AWS::StackName}-api"}, "ProtocolType": "HTTP"},
        },
        "HttpApiIntegration": {
            "Type": "AWS::ApiGatewayV2::Integration",
            "Properties": {
                "ApiId": _ref("HttpApi"),
                "IntegrationType": "AWS_PROXY",
                "IntegrationUri": {"Fn::GetAtt": ["Function", "Arn"]},
                "PayloadFormatVersion": "2.0",
                "TimeoutInMillis": (FUNCTION_TIMEOUT_SECONDS + 1) * 1000,
            },
        },
        "HttpApiRoute": {
            "Type": "AWS::ApiGatewayV2::Route",
            "Properties": {
                "ApiId": _ref("HttpApi"),
                "RouteKey": "$default",
                "Target": {"Fn::Sub": "integrations/${HttpApiIntegration}"},
            },
        },
        "HttpApiStage": {
            "Type": "AWS::ApiGatewayV2::Stage",
            "Properties": {
                "ApiId": _ref("HttpApi"),
                "StageName": "$default",
                "AutoDeploy": True,
                # API Gateway's own throttle in front of our per-tenant limits.
                "DefaultRouteSettings": {"ThrottlingBurstLimit": 500, "ThrottlingRateLimit": 1000},
                "AccessLogSettings": {
                    "DestinationArn": {"Fn::GetAtt": ["AccessLogGroup", "Arn"]},
                    "Format": json.dumps(ACCESS_LOG_FORMAT, separators=(",", ":")),
                },
            },
        },
        "HttpApiInvokePermission": {
            "Type": "AWS::Lambda::Permission",
            "Properties": {
                "Action": "lambda:InvokeFunction",
                "FunctionName": _ref("Function"),
                "Principal": "apigateway.amazonaws.com",
                "SourceArn": {
                    "Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/*"
                },
            },
        },
    }


def _live_function(description: str, handler: str, role: str, log_group: str, timeout: int) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Function",
        "DependsOn": ["LivePolicy"],
        "Properties": {
            "Description": description,
            "Runtime": RUNTIME,
            "Architectures": ["x86_64"],
            "Handler": handler,
            "Code": {"S3Bucket": _ref("CodeBucket"), "S3Key": _ref("CodeKey")},
            "MemorySize": 1024,
            "Timeout": timeout,
            "Role": {"Fn::GetAtt": [role, "Arn"]},
            "LoggingConfig": {"LogGroup": _ref(log_group), "LogFormat": "Text"},
            "Environment": {"Variables": _environment()},
        },
    }


def _live() -> dict[str, Any]:
    """The WebSocket API (graphql-transport-ws through one function on $connect, $default and
    $disconnect) and the fan-out function on the table's stream."""
    connections = {"Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${WebSocketApi}/*"}
    routes = {
        f"WebSocket{name}Route": {
            "Type": "AWS::ApiGatewayV2::Route",
            "Properties": {
                "ApiId": _ref("WebSocketApi"),
                "RouteKey": key,
                "Target": {"Fn::Sub": "integrations/${WebSocketIntegration}"},
            },
        }
        for name, key in (("Connect", "$connect"), ("Default", "$default"), ("Disconnect", "$disconnect"))
    }
    return {
        "LiveRole": _service_role(
            "HR API live connections: logs, posting to the WebSocket API, assuming the data roles"
        ),
        "FanOutRole": _service_role(
            "HR API live fan-out: logs, the table's stream, posting to the WebSocket API, assuming the data roles"
        ),
        "LivePolicy": {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "PolicyName": "LiveConnections",
                "Roles": [_ref("LiveRole"), _ref("FanOutRole")],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        *_service_policy()["Properties"]["PolicyDocument"]["Statement"],
                        {
                            "Sid": "PostToThisApisConnections",
                            "Effect": "Allow",
                            "Action": ["execute-api:ManageConnections"],
                            "Resource": [connections],
                        },
                    ],
                },
            },
        },
        "FanOutStreamPolicy": {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "PolicyName": "ReadTheTablesStream",
                "Roles": [_ref("FanOutRole")],
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "ReadTheTablesStream",
                            "Effect": "Allow",
                            "Action": [
                                "dynamodb:DescribeStream",
                                "dynamodb:GetRecords",
                                "dynamodb:GetShardIterator",
                                "dynamodb:ListStreams",
                            ],
                            "Resource": [{"Fn::GetAtt": ["Table", "StreamArn"]}],
                        }
                    ],
                },
            },
        },
        "LiveFunction": _live_function(
            "HR GraphQL API: live connections (API Gateway WebSocket, graphql-transport-ws)",
            LIVE_HANDLER,
            "LiveRole",
            "LiveLogGroup",
            FUNCTION_TIMEOUT_SECONDS,
        ),
        "FanOutFunction": _live_function(
            "HR GraphQL API: live updates fanned out from the table's stream",
            FAN_OUT_HANDLER,
            "FanOutRole",
            "FanOutLogGroup",
            FAN_OUT_TIMEOUT_SECONDS,
        ),
        "WebSocketApi": {
            "Type": "AWS::ApiGatewayV2::Api",
            "Properties": {
                "Name": {"Fn::Sub": "${AWS::StackName}-live"},
                "ProtocolType": "WEBSOCKET",
                # No route but the three: every message goes to $default, whatever its type.
                "RouteSelectionExpression": "$request.body.type",
            },
        },
        "WebSocketIntegration": {
            "Type": "AWS::ApiGatewayV2::Integration",
            "Properties": {
                "ApiId": _ref("WebSocketApi"),
                "IntegrationType": "AWS_PROXY",
                "IntegrationUri": {
                    "Fn::Sub": "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/"
                    "${LiveFunction.Arn}/invocations"
                },
                "TimeoutInMillis": (FUNCTION_TIMEOUT_SECONDS + 1) * 1000,
            },
        },
        **routes,
        "WebSocketStage": {
            "Type": "AWS::ApiGatewayV2::Stage",
            "Properties": {
                "ApiId": _ref("WebSocketApi"),
                "StageName": LIVE_STAGE,
                "AutoDeploy": True,
                "DefaultRouteSettings": {"ThrottlingBurstLimit": 500, "ThrottlingRateLimit": 1000},
            },
        },
        "WebSocketInvokePermission": {
            "Type": "AWS::Lambda::Permission",
            "Properties": {
                "Action": "lambda:InvokeFunction",
                "FunctionName": _ref("LiveFunction"),
                "Principal": "apigateway.amazonaws.com",
                "SourceArn": connections,
            },
        },
        "FanOutEventSource": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "DependsOn": ["FanOutStreamPolicy"],
            "Properties": {
                "EventSourceArn": {"Fn::GetAtt": ["Table", "StreamArn"]},
                "FunctionName": _ref("FanOutFunction"),
                "StartingPosition": "LATEST",
                "BatchSize": 100,
                "MaximumBatchingWindowInSeconds": 0,
                # A failing batch is split to find the record, retried, and given up after a day.
                "BisectBatchOnFunctionError": True,
                "MaximumRetryAttempts": 10,
                "MaximumRecordAgeInSeconds": 3600,
                "FilterCriteria": {"Filters": [{"Pattern": json.dumps(pattern)} for pattern in FAN_OUT_FILTERS]},
            },
        },
    }


def _webhook_environment() -> dict[str, Any]:
    """The webhooks functions': the table, the data roles and the queue; no token secret."""
    environment = {
        name: value
        for name, value in _environment().items()
        if name not in ("JWT_SECRET_ARN", "OIDC_ISSUER", "OIDC_AUDIENCE", "OIDC_JWKS", "CORS_ORIGINS", "ALLOWED_HOSTS")
    }
    return {**environment, "WEBHOOK_QUEUE_LOST_AFTER_SECONDS": str(WEBHOOK_LOST_AFTER_SECONDS)}


def _statement(sid: str, actions: list[str], resources: list[Any]) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}


def _webhooks() -> dict[str, Any]:
    """The queue and its dead-letter queue, the three functions, their roles, the stream's and
    the queue's event sources and the sweep's schedule."""
    queue_arn = {"Fn::GetAtt": ["WebhookQueue", "Arn"]}
    send = _statement("SendToTheWebhookQueue", ["sqs:SendMessage"], [queue_arn])
    assume = _service_policy()["Properties"]["PolicyDocument"]["Statement"][0]
    roles = {
        "WebhookStreamRole": "HR API webhooks from the table's stream: the stream, the outbox, sending to the queue",
        "WebhookQueueRole": "HR API webhook deliveries: the queue's messages, the outbox, sending to the queue",
        "WebhookSweepRole": "HR API webhooks sweep: the outbox, sending to the queue",
    }
    own: dict[str, list[dict[str, Any]]] = {
        "WebhookStreamRole": [
            _statement(
                "ReadTheTablesStream",
                ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"],
                [{"Fn::GetAtt": ["Table", "StreamArn"]}],
            ),
            send,
        ],
        "WebhookQueueRole": [
            _statement(
                "ReceiveFromTheWebhookQueue",
                ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"],
                [queue_arn],
            ),
            send,
        ],
        "WebhookSweepRole": [send],
    }
    resources: dict[str, Any] = {
        "WebhookDeadLetterQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {"MessageRetentionPeriod": 14 * 24 * 3600, "SqsManagedSseEnabled": True},
        },
        "WebhookQueue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "VisibilityTimeout": WEBHOOK_VISIBILITY_TIMEOUT_SECONDS,
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": ["WebhookDeadLetterQueue", "Arn"]},
                    "maxReceiveCount": WEBHOOK_MAX_RECEIVE_COUNT,
                },
            },
        },
    }
    for role, description in roles.items():
        resources[role] = _service_role(description)
        resources[f"{role[: -len('Role')]}Policy"] = {
            "Type": "AWS::IAM::Policy",
            "Properties": {
                "PolicyName": role[: -len("Role")],
                "Roles": [_ref(role)],
                "PolicyDocument": {"Version": "2012-10-17", "Statement": [assume, *own[role]]},
            },
        }
    for name, handler, timeout in (
        ("WebhookStream", WEBHOOK_STREAM_HANDLER, FAN_OUT_TIMEOUT_SECONDS),
        ("WebhookQueue", WEBHOOK_QUEUE_HANDLER, WEBHOOK_QUEUE_TIMEOUT_SECONDS),
        ("WebhookSweep", WEBHOOK_SWEEP_HANDLER, WEBHOOK_SWEEP_TIMEOUT_SECONDS),
    ):
        resources[f"{name}Function"] = {
            "Type": "AWS::Lambda::Function",
            "DependsOn": [f"{name}Policy"],
            "Properties": {
                "Description": f"HR GraphQL API: webhooks ({handler.rsplit('.', 1)[1]})",
                "Runtime": RUNTIME,
                "Architectures": ["x86_64"],
                "Handler": handler,
                "Code": {"S3Bucket": _ref("CodeBucket"), "S3Key": _ref("CodeKey")},
                "MemorySize": 512,
                "Timeout": timeout,
                "Role": {"Fn::GetAtt": [f"{name}Role", "Arn"]},
                "LoggingConfig": {"LogGroup": _ref(f"{name}LogGroup"), "LogFormat": "Text"},
                "Environment": {"Variables": _webhook_environment()},
            },
        }
    resources["WebhookStreamEventSource"] = {
        "Type": "AWS::Lambda::EventSourceMapping",
        "DependsOn": ["WebhookStreamPolicy"],
        "Properties": {
            "EventSourceArn": {"Fn::GetAtt": ["Table", "StreamArn"]},
            "FunctionName": _ref("WebhookStreamFunction"),
            "StartingPosition": "LATEST",
            "BatchSize": 100,
            "MaximumBatchingWindowInSeconds": 0,
            # A failing batch is split to find the record, retried, and given up after an hour:
            # the sweep reads the audit trail back from the cursor and finds what it left.
            "BisectBatchOnFunctionError": True,
            "MaximumRetryAttempts": 10,
            "MaximumRecordAgeInSeconds": 3600,
            "FilterCriteria": {"Filters": [{"Pattern": json.dumps(pattern)} for pattern in WEBHOOK_STREAM_FILTERS]},
        },
    }
    resources["WebhookQueueEventSource"] = {
        "Type": "AWS::Lambda::EventSourceMapping",
        "DependsOn": ["WebhookQueuePolicy"],
        "Properties": {
            "EventSourceArn": queue_arn,
            "FunctionName": _ref("WebhookQueueFunction"),
            "BatchSize": WEBHOOK_BATCH_SIZE,
            "MaximumBatchingWindowInSeconds": 0,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "ScalingConfig": {"MaximumConcurrency": WEBHOOK_MAX_CONCURRENCY},
        },
    }
    resources["WebhookSweepSchedule"] = {
        "Type": "AWS::Events::Rule",
        "Properties": {
            "Description": "HR API webhooks: resend what the queue lost, from the outbox",
            "ScheduleExpression": WEBHOOK_SWEEP_SCHEDULE,
            "State": "ENABLED",
            "Targets": [{"Id": "WebhookSweep", "Arn": {"Fn::GetAtt": ["WebhookSweepFunction", "Arn"]}}],
        },
    }
    resources["WebhookSweepInvokePermission"] = {
        "Type": "AWS::Lambda::Permission",
        "Properties": {
            "Action": "lambda:InvokeFunction",
            "FunctionName": _ref("WebhookSweepFunction"),
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": ["WebhookSweepSchedule", "Arn"]},
        },
    }
    return resources


def _window(description: str, threshold: Any, comparison: str = "GreaterThanOrEqualToThreshold") -> dict[str, Any]:
    """An alarm's properties but its metric: the window, the threshold and where it goes."""
    return {
        "AlarmDescription": description,
        "EvaluationPeriods": ALARM_EVALUATION_PERIODS,
        "DatapointsToAlarm": ALARM_DATAPOINTS,
        "Threshold": threshold,
        "ComparisonOperator": comparison,
        "TreatMissingData": "notBreaching",
        "AlarmActions": [_ref("AlarmTopic")],
        "OKActions": [_ref("AlarmTopic")],
    }


def _alarm(
    description: str,
    namespace: str,
    metric: str,
    dimensions: list[dict[str, Any]],
    *,
    threshold: Any = 1,
    statistic: str = "Sum",
    comparison: str = "GreaterThanOrEqualToThreshold",
) -> dict[str, Any]:
    """At least ``threshold`` (a Sum, or a percentile such as p95) in ALARM_DATAPOINTS of the
    last ALARM_EVALUATION_PERIODS minutes."""
    stat = {"ExtendedStatistic": statistic} if statistic.startswith("p") else {"Statistic": statistic}
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "Namespace": namespace,
            "MetricName": metric,
            **({"Dimensions": dimensions} if dimensions else {}),  # none: the EMF metric of the whole API
            **stat,
            "Period": ALARM_PERIOD_SECONDS,
            **_window(description, threshold, comparison),
        },
    }


def _sum_alarm(description: str, metrics: list[tuple[str, str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """At least one in ALARM_DATAPOINTS of the last ALARM_EVALUATION_PERIODS minutes, summed over
    ``metrics`` (namespace, name, dimensions): DynamoDB reports some figures per operation or index."""
    queries: list[dict[str, Any]] = [
        {
            "Id": f"m{index}",
            "MetricStat": {
                "Metric": {"Namespace": namespace, "MetricName": name, "Dimensions": dimensions},
                "Period": ALARM_PERIOD_SECONDS,
                "Stat": "Sum",
            },
            "ReturnData": False,
        }
        for index, (namespace, name, dimensions) in enumerate(metrics)
    ]
    queries.append({"Id": "total", "Expression": "SUM(METRICS())", "Label": description, "ReturnData": True})
    return {"Type": "AWS::CloudWatch::Alarm", "Properties": {"Metrics": queries, **_window(description, 1)}}


def _alarms() -> dict[str, Any]:
    function: list[dict[str, Any]] = [{"Name": "FunctionName", "Value": _ref("Function")}]
    table: list[dict[str, Any]] = [{"Name": "TableName", "Value": _ref("Table")}]
    index = [*table, {"Name": "GlobalSecondaryIndexName", "Value": keys.GSI1}]
    api: list[dict[str, Any]] = [{"Name": "ApiId", "Value": _ref("HttpApi")}, {"Name": "Stage", "Value": "$default"}]
    dynamodb = "AWS/DynamoDB"
    return {
        "AlarmTopic": {"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": "HR API alarms"}},
        "AlarmEmailSubscription": {
            "Type": "AWS::SNS::Subscription",
            "Condition": "HasAlarmEmail",
            "Properties": {"TopicArn": _ref("AlarmTopic"), "Protocol": "email", "Endpoint": _ref("AlarmEmail")},
        },
        "FunctionErrorsAlarm": _alarm("The API function failed (uncaught errors)", "AWS/Lambda", "Errors", function),
        "FunctionThrottlesAlarm": _alarm("The API function was throttled", "AWS/Lambda", "Throttles", function),
        "Api5xxAlarm": _alarm("The HTTP API answered 5xx (503 and 504 are outages)", "AWS/ApiGateway", "5xx", api),
        "UnavailableAlarm": _alarm(
            "Requests failed with UNAVAILABLE (DynamoDB unreachable, throttling or failing)",
            emf.NAMESPACE,
            emf.error_metric(Code.UNAVAILABLE.value),
            [],
        ),
        "TimeoutAlarm": _alarm(
            "Requests failed with TIMEOUT (past REQUEST_TIMEOUT_SECONDS)",
            emf.NAMESPACE,
            emf.error_metric(Code.TIMEOUT.value),
            [],
        ),
        "LatencyP95Alarm": _alarm(
            "The API's p95 latency is above LatencyP95Milliseconds",
            emf.NAMESPACE,
            emf.LATENCY,
            [],
            threshold=_ref("LatencyP95Milliseconds"),
            statistic="p95",
            comparison="GreaterThanThreshold",
        ),
        "TableSystemErrorsAlarm": _sum_alarm(
            "DynamoDB answered with system errors (HTTP 500)",
            [
                (dynamodb, "SystemErrors", [*table, {"Name": "Operation", "Value": operation}])
                for operation in DATA_OPERATIONS
            ],
        ),
        "TableReadThrottlesAlarm": _sum_alarm(
            "DynamoDB throttled reads (table or index)",
            [(dynamodb, "ReadThrottleEvents", table), (dynamodb, "ReadThrottleEvents", index)],
        ),
        "TableWriteThrottlesAlarm": _sum_alarm(
            "DynamoDB throttled writes (table or index)",
            [(dynamodb, "WriteThrottleEvents", table), (dynamodb, "WriteThrottleEvents", index)],
        ),
        **_live_alarms(),
        **_webhook_alarms(),
    }


def _webhook_alarms() -> dict[str, Any]:
    """Webhooks on AWS: messages in the dead-letter queue, any of the three functions failing,
    the stream's function behind, and the deliveries' own errors (DynamoDB or SQS failing)."""

    def function(name: str) -> list[dict[str, Any]]:
        return [{"Name": "FunctionName", "Value": _ref(name)}]

    lambda_ = "AWS/Lambda"
    return {
        "WebhookDeadLetterAlarm": _alarm(
            "Webhook messages are in the dead-letter queue (their calls kept failing; the sweep resends "
            "from the outbox, so look at the queue function's logs, then purge it)",
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["WebhookDeadLetterQueue", "QueueName"]}}],
            threshold=0,
            statistic="Maximum",
            comparison="GreaterThanThreshold",
        ),
        "WebhookQueueFunctionErrorsAlarm": _alarm(
            "The webhook deliveries' function failed (uncaught errors: the whole batch is received again)",
            lambda_,
            "Errors",
            function("WebhookQueueFunction"),
        ),
        "WebhookFeedFunctionsErrorsAlarm": _sum_alarm(
            "A webhook function on the stream or the sweep's schedule failed",
            [
                (lambda_, "Errors", function("WebhookStreamFunction")),
                (lambda_, "Errors", function("WebhookSweepFunction")),
            ],
        ),
        "WebhookStreamIteratorAgeAlarm": _alarm(
            "Webhooks are more than a minute behind the table's stream (IteratorAge)",
            lambda_,
            "IteratorAge",
            function("WebhookStreamFunction"),
            threshold=FAN_OUT_MAX_AGE_MILLISECONDS,
            statistic="Maximum",
            comparison="GreaterThanThreshold",
        ),
        "WebhookDeliveryErrorsAlarm": _alarm(
            "Webhook deliveries failed on our side (DynamoDB or SQS calls; the messages are received again)",
            emf.NAMESPACE,
            queue_delivery.ERRORS,
            [],
        ),
    }


def _live_alarms() -> dict[str, Any]:
    """Live updates: either live function failing or throttled, the fan-out behind the stream,
    and the WebSocket API failing to run its function."""
    live: list[dict[str, Any]] = [{"Name": "FunctionName", "Value": _ref("LiveFunction")}]
    fan_out: list[dict[str, Any]] = [{"Name": "FunctionName", "Value": _ref("FanOutFunction")}]
    websocket: list[dict[str, Any]] = [
        {"Name": "ApiId", "Value": _ref("WebSocketApi")},
        {"Name": "Stage", "Value": LIVE_STAGE},
    ]
    lambda_ = "AWS/Lambda"
    return {
        "LiveFunctionErrorsAlarm": _alarm(
            "The live connections function failed (uncaught errors)", lambda_, "Errors", live
        ),
        "FanOutFunctionErrorsAlarm": _alarm(
            "The live fan-out function failed (uncaught errors; its batch is retried, then given up)",
            lambda_,
            "Errors",
            fan_out,
        ),
        "LiveFunctionThrottlesAlarm": _sum_alarm(
            "A live function was throttled (connections or fan-out)",
            [(lambda_, "Throttles", live), (lambda_, "Throttles", fan_out)],
        ),
        "FanOutIteratorAgeAlarm": _alarm(
            "The live fan-out is more than a minute behind the table's stream (IteratorAge)",
            lambda_,
            "IteratorAge",
            fan_out,
            threshold=FAN_OUT_MAX_AGE_MILLISECONDS,
            statistic="Maximum",
            comparison="GreaterThanThreshold",
        ),
        "WebSocketErrorsAlarm": _sum_alarm(
            "The WebSocket API failed to run the live function (integration or execution errors)",
            [
                ("AWS/ApiGateway", "IntegrationError", websocket),
                ("AWS/ApiGateway", "ExecutionError", websocket),
            ],
        ),
    }


def _parameters() -> dict[str, Any]:
    return {
        "TableName": {"Type": "String", "Default": DEFAULT_TABLE_NAME, "Description": "The DynamoDB table's name"},
        "CodeBucket": {"Type": "String", "Description": "S3 bucket holding the deployment zip (make package)"},
        "CodeKey": {"Type": "String", "Description": "S3 key of the deployment zip"},
        "OidcIssuer": {"Type": "String", "Description": "The identity provider's issuer (iss) URL"},
        "OidcAudience": {"Type": "String", "Description": "Client id(s) ID tokens are issued to, comma-separated"},
        "OidcJwks": {"Type": "String", "Description": "The identity provider's JWKS URL (https://)"},
        "CorsOrigins": {"Type": "String", "Default": "", "Description": "Browser origins allowed, comma-separated"},
        "LogRetentionDays": {"Type": "Number", "Default": 30, "Description": "Days the API's logs are kept"},
        "ReservedConcurrency": {
            "Type": "Number",
            "Default": -1,
            "MinValue": -1,
            "Description": "Concurrent executions reserved for (and capping) the function; -1 reserves none",
        },
        "AlarmEmail": {
            "Type": "String",
            "Default": "",
            "AllowedPattern": r"^$|^[^@\s]+@[^@\s]+$",
            "Description": "An email address subscribed to the alarms (confirm the subscription); empty for none",
        },
        "LatencyP95Milliseconds": {
            "Type": "Number",
            "Default": 1000,
            "MinValue": 1,
            "Description": "The p95 latency (ms, per minute) past which the latency alarm counts a minute as breaching",
        },
    }


def _conditions() -> dict[str, Any]:
    return {
        "HasReservedConcurrency": {"Fn::Not": [{"Fn::Equals": [_ref("ReservedConcurrency"), "-1"]}]},
        "HasAlarmEmail": {"Fn::Not": [{"Fn::Equals": [_ref("AlarmEmail"), ""]}]},
    }


# API Gateway's access-log line, one JSON object per request ($context variables of HTTP APIs).
ACCESS_LOG_FORMAT: Final = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "method": "$context.httpMethod",
    "path": "$context.path",
    "protocol": "$context.protocol",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "responseLatencyMs": "$context.responseLatency",
    "integrationStatus": "$context.integrationStatus",
    "integrationLatencyMs": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
}
# Log groups that outlive the stack; the key that encrypts them too, or they could not be read.
LOG_GROUPS: Final = {
    "LogGroup": "/aws/lambda/${AWS::StackName}-api",
    "AccessLogGroup": "/aws/apigateway/${AWS::StackName}-api-access",
    "LiveLogGroup": "/aws/lambda/${AWS::StackName}-live",
    "FanOutLogGroup": "/aws/lambda/${AWS::StackName}-fan-out",
    "WebhookStreamLogGroup": "/aws/lambda/${AWS::StackName}-webhook-stream",
    "WebhookQueueLogGroup": "/aws/lambda/${AWS::StackName}-webhook-queue",
    "WebhookSweepLogGroup": "/aws/lambda/${AWS::StackName}-webhook-sweep",
}
RETAIN: Final = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}


def _log_key() -> dict[str, Any]:
    log_group_arns = [
        {"Fn::Sub": f"arn:${{AWS::Partition}}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:{name}"}
        for name in LOG_GROUPS.values()
    ]
    return {
        "Type": "AWS::KMS::Key",
        **RETAIN,
        "Properties": {
            "Description": "HR API: encrypts the function's and the HTTP API's log groups",
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "AccountAdministersTheKey",
                        "Effect": "Allow",
                        "Principal": {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}},
                        "Action": "kms:*",
                        "Resource": "*",
                    },
                    {
                        "Sid": "CloudWatchLogsUsesItForTheseLogGroups",
                        "Effect": "Allow",
                        "Principal": {"Service": {"Fn::Sub": "logs.${AWS::Region}.amazonaws.com"}},
                        "Action": [
                            "kms:Encrypt*",
                            "kms:Decrypt*",
                            "kms:ReEncrypt*",
                            "kms:GenerateDataKey*",
                            "kms:Describe*",
                        ],
                        "Resource": "*",
                        "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_group_arns}},
                    },
                ],
            },
        },
    }


def _log_group(name: str) -> dict[str, Any]:
    return {
        "Type": "AWS::Logs::LogGroup",
        **RETAIN,
        "Properties": {
            "LogGroupName": {"Fn::Sub": name},
            "RetentionInDays": _ref("LogRetentionDays"),
            "KmsKeyId": {"Fn::GetAtt": ["LogKey", "Arn"]},
        },
    }


def template() -> dict[str, Any]:
    resources: dict[str, Any] = {
        "Table": {
            "Type": "AWS::DynamoDB::Table",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": table_properties(_ref("TableName")),
        },
        "ServiceRole": _service_role(),
        "ServicePolicy": _service_policy(),
        **{ROLE_RESOURCES[role]: _data_role(role) for role in iam.ROLES},
        "JwtSecret": {
            "Type": "AWS::SecretsManager::Secret",
            "Properties": {
                "Description": "HR API: the HS256 secret signing access tokens and cursors, generated here",
                "GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": True},
            },
        },
        "LogKey": _log_key(),
        **{resource: _log_group(name) for resource, name in LOG_GROUPS.items()},
        "Function": _function(),
        **_http_api(),
        **_live(),
        **_webhooks(),
        **_alarms(),
    }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "HR GraphQL API: one DynamoDB table, tenant-bounded IAM roles, Lambda behind an HTTP API",
        "Parameters": _parameters(),
        "Conditions": _conditions(),
        "Resources": resources,
        "Outputs": {
            "ApiUrl": {"Value": {"Fn::GetAtt": ["HttpApi", "ApiEndpoint"]}, "Description": "The API's base URL"},
            "LiveUrl": {
                "Value": {"Fn::Sub": f"${{WebSocketApi.ApiEndpoint}}/{LIVE_STAGE}"},
                "Description": "Live updates: graphql-transport-ws over WebSocket",
            },
            "TableName": {"Value": _ref("Table")},
            "FunctionName": {"Value": _ref("Function")},
            "JwtSecretArn": {"Value": _ref("JwtSecret"), "Description": "The token secret (Secrets Manager)"},
            "AlarmTopicArn": {"Value": _ref("AlarmTopic"), "Description": "Where the alarms go"},
            "WebhookQueueUrl": {"Value": _ref("WebhookQueue"), "Description": "Webhook deliveries' queue"},
            "WebhookDeadLetterQueueUrl": {
                "Value": _ref("WebhookDeadLetterQueue"),
                "Description": "Webhook messages whose calls kept failing",
            },
            "LogGroupName": {"Value": _ref("LogGroup")},
            "AccessLogGroupName": {"Value": _ref("AccessLogGroup")},
            **{f"{role}RoleArn": {"Value": {"Fn::GetAtt": [ROLE_RESOURCES[role], "Arn"]}} for role in iam.ROLES},
        },
    }


def render() -> str:
    return json.dumps(template(), indent=2) + "\n"

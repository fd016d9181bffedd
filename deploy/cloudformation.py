"""The CloudFormation template of the whole service, built from the code's own definitions.

The table comes from ``datastore.provision`` (the definition the server creates locally), the
role policies from ``datastore.iam`` (what ``server.py iam-policy`` prints), so the deployed
table and its IAM boundary cannot drift from what the code and its tests assume.

What it creates:
- the table: on-demand, point-in-time recovery, TTL on idempotency records, deletion
  protection, encryption with a KMS key;
- the four data roles (TenantData, SignIn, Platform, PersistedDocuments) with their ``LeadingKeys`` policies,
  each assumable only by the service role, with ``sts:TagSession`` for the ``org`` and
  ``provisioning`` tags;
- the service role the Lambda function runs as: it can describe the table (readiness) and
  assume the data roles, and read no item itself;
- the API as one Lambda function (``graphql_api.lambda_handler.handler``, Mangum) behind an
  HTTP API, its log group, and alarms on errors and throttles.
"""

from __future__ import annotations

import json
from typing import Any, Final

from datastore import iam, items, keys, provision
from datastore.config import DEFAULT_TABLE_NAME

# Lambda's Python runtime; `make package` builds wheels for the same version and platform.
RUNTIME: Final = "python3.11"
HANDLER: Final = "graphql_api.lambda_handler.handler"
# Longer than the request deadline (REQUEST_TIMEOUT_SECONDS), so a request times out in our
# code, with a coded error, before Lambda kills it.
FUNCTION_TIMEOUT_SECONDS: Final = 15

ROLE_RESOURCES: Final = {
    "TenantData": "TenantDataRole",
    "SignIn": "SignInRole",
    "Platform": "PlatformRole",
    "PersistedDocuments": "PersistedDocumentsRole",
}
# The environment variable that names each role to the server (datastore/credentials.py).
ROLE_SETTINGS: Final = {
    "TenantData": "TENANT_ROLE_ARN",
    "SignIn": "SIGNIN_ROLE_ARN",
    "Platform": "PLATFORM_ROLE_ARN",
    "PersistedDocuments": "DOCUMENTS_ROLE_ARN",
}

TABLE_ARN: Final = {"Fn::GetAtt": ["Table", "Arn"]}
INDEX_ARN: Final = {"Fn::Sub": f"${{Table.Arn}}/index/{keys.GSI1}"}


def _ref(name: str) -> dict[str, str]:
    return {"Ref": name}


def table_properties(table_name: Any) -> dict[str, Any]:
    """The table as the server creates it, plus what only production needs."""
    definition = provision.table_definition(DEFAULT_TABLE_NAME)
    definition["TableName"] = table_name
    return {
        **definition,
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "TimeToLiveSpecification": {"AttributeName": items.EXPIRES_AT, "Enabled": True},
        "DeletionProtectionEnabled": True,
        "SSESpecification": {"SSEEnabled": True, "SSEType": "KMS"},
    }


def _data_role(role: str) -> dict[str, Any]:
    policy = iam.policies(TABLE_ARN, INDEX_ARN)[role]
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
                        "Principal": {"AWS": {"Fn::GetAtt": ["ServiceRole", "Arn"]}},
                        "Action": ["sts:AssumeRole", "sts:TagSession"],
                    }
                ],
            },
            "Policies": [{"PolicyName": f"{role}Items", "PolicyDocument": policy}],
        },
    }


def _service_role() -> dict[str, Any]:
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "Description": "HR API Lambda function: logs, table health, and assuming the data roles only",
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


def _service_policy() -> dict[str, Any]:
    # A separate resource: the data roles trust the service role, so the service role's own
    # policy naming them would be a dependency cycle.
    return {
        "Type": "AWS::IAM::Policy",
        "Properties": {
            "PolicyName": "AssumeDataRoles",
            "Roles": [_ref("ServiceRole")],
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
                ],
            },
        },
    }


def _function() -> dict[str, Any]:
    environment = {
        "HR_ENV": "production",
        # API Gateway answers only for the API's own domains, so any Host that reaches the function is one.
        "ALLOWED_HOSTS": "*",
        "DYNAMODB_ENDPOINT": "aws",
        "HR_TABLE_NAME": _ref("Table"),
        "JWT_SECRET": _ref("JwtSecret"),
        "OIDC_ISSUER": _ref("OidcIssuer"),
        "OIDC_AUDIENCE": _ref("OidcAudience"),
        "OIDC_JWKS": _ref("OidcJwks"),
        "CORS_ORIGINS": _ref("CorsOrigins"),
        "LOG_FORMAT": "json",
        **{setting: {"Fn::GetAtt": [ROLE_RESOURCES[role], "Arn"]} for role, setting in ROLE_SETTINGS.items()},
    }
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


def _alarm(description: str, namespace: str, metric: str, dimensions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "AlarmDescription": description,
            "Namespace": namespace,
            "MetricName": metric,
            "Dimensions": dimensions,
            "Statistic": "Sum",
            "Period": 300,
            "EvaluationPeriods": 1,
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
            "AlarmActions": [_ref("AlarmTopic")],
        },
    }


def _alarms() -> dict[str, Any]:
    function: list[dict[str, Any]] = [{"Name": "FunctionName", "Value": _ref("Function")}]
    table: list[dict[str, Any]] = [{"Name": "TableName", "Value": _ref("Table")}]
    api: list[dict[str, Any]] = [{"Name": "ApiId", "Value": _ref("HttpApi")}, {"Name": "Stage", "Value": "$default"}]
    return {
        "AlarmTopic": {"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": "HR API alarms"}},
        "FunctionErrorsAlarm": _alarm("The API function failed (uncaught errors)", "AWS/Lambda", "Errors", function),
        "FunctionThrottlesAlarm": _alarm("The API function was throttled", "AWS/Lambda", "Throttles", function),
        "Api5xxAlarm": _alarm("The HTTP API answered 5xx", "AWS/ApiGateway", "5xx", api),
        "TableReadThrottlesAlarm": _alarm("DynamoDB throttled reads", "AWS/DynamoDB", "ReadThrottleEvents", table),
        "TableWriteThrottlesAlarm": _alarm("DynamoDB throttled writes", "AWS/DynamoDB", "WriteThrottleEvents", table),
    }


def _parameters() -> dict[str, Any]:
    return {
        "TableName": {"Type": "String", "Default": DEFAULT_TABLE_NAME, "Description": "The DynamoDB table's name"},
        "CodeBucket": {"Type": "String", "Description": "S3 bucket holding the deployment zip (make package)"},
        "CodeKey": {"Type": "String", "Description": "S3 key of the deployment zip"},
        "JwtSecret": {
            "Type": "String",
            "NoEcho": True,
            "MinLength": 32,
            "Description": "HS256 secret signing the API's access tokens and cursors (32+ characters)",
        },
        "OidcIssuer": {"Type": "String", "Description": "The identity provider's issuer (iss) URL"},
        "OidcAudience": {"Type": "String", "Description": "Client id(s) ID tokens are issued to, comma-separated"},
        "OidcJwks": {"Type": "String", "Description": "The identity provider's JWKS URL (https://)"},
        "CorsOrigins": {"Type": "String", "Default": "", "Description": "Browser origins allowed, comma-separated"},
        "LogRetentionDays": {"Type": "Number", "Default": 30, "Description": "Days the API's logs are kept"},
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
        "LogGroup": {
            "Type": "AWS::Logs::LogGroup",
            "DeletionPolicy": "Delete",
            "UpdateReplacePolicy": "Delete",
            "Properties": {
                "LogGroupName": {"Fn::Sub": "/aws/lambda/${AWS::StackName}-api"},
                "RetentionInDays": _ref("LogRetentionDays"),
            },
        },
        "Function": _function(),
        **_http_api(),
        **_alarms(),
    }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "HR GraphQL API: one DynamoDB table, tenant-bounded IAM roles, Lambda behind an HTTP API",
        "Parameters": _parameters(),
        "Resources": resources,
        "Outputs": {
            "ApiUrl": {"Value": {"Fn::GetAtt": ["HttpApi", "ApiEndpoint"]}, "Description": "The API's base URL"},
            "TableName": {"Value": _ref("Table")},
            "FunctionName": {"Value": _ref("Function")},
            **{f"{role}RoleArn": {"Value": {"Fn::GetAtt": [ROLE_RESOURCES[role], "Arn"]}} for role in iam.ROLES},
        },
    }


def render() -> str:
    return json.dumps(template(), indent=2) + "\n"

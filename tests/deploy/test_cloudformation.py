"""The CloudFormation template: valid, and built from the same definitions the code uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from datastore import iam, provision
from deploy import cloudformation

ROOT = Path(__file__).resolve().parents[2]
TABLE_ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/hr-prod"


def printed_template() -> dict[str, Any]:
    """The template as an operator gets it: ``python server.py cloudformation``."""
    result = subprocess.run(
        [sys.executable, "server.py", "cloudformation"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    template: dict[str, Any] = json.loads(result.stdout)
    return template


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return printed_template()


def resolve(value: Any) -> Any:
    """The template's references to the table, replaced by a concrete ARN."""
    if value == {"Fn::GetAtt": ["Table", "Arn"]}:
        return TABLE_ARN
    if isinstance(value, dict) and set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
        return value["Fn::Sub"].replace("${Table.Arn}", TABLE_ARN)
    if isinstance(value, dict):
        return {key: resolve(item) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item) for item in value]
    return value


def test_template__cfn_lint__no_errors_or_warnings(template: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template))
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), "--format", "parseable", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    print(result.stdout or "cfn-lint: no findings")
    assert result.returncode == 0, result.stdout + result.stderr


def test_template__table__is_the_table_the_server_creates(template: dict[str, Any]) -> None:
    properties = dict(template["Resources"]["Table"]["Properties"])
    assert properties.pop("TableName") == {"Ref": "TableName"}
    created = provision.table_definition("any")
    del created["TableName"]
    assert {key: properties[key] for key in created} == created


def test_template__table__production_protections(template: dict[str, Any]) -> None:
    table = template["Resources"]["Table"]
    properties = table["Properties"]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    assert properties["DeletionProtectionEnabled"] is True
    assert properties["SSESpecification"]["SSEEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"


def test_template__role_policies__equal_iam_policy_command(template: dict[str, Any]) -> None:
    printed = subprocess.run(
        [sys.executable, "server.py", "iam-policy", "--table-arn", TABLE_ARN],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(printed.stdout)
    assert set(expected) == set(iam.ROLES)
    for role, resource in cloudformation.ROLE_RESOURCES.items():
        (policy,) = template["Resources"][resource]["Properties"]["Policies"]
        assert resolve(policy["PolicyDocument"]) == expected[role], role


def test_template__data_roles__assumable_only_by_the_service_role_with_tags(template: dict[str, Any]) -> None:
    for resource in cloudformation.ROLE_RESOURCES.values():
        (statement,) = template["Resources"][resource]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert statement["Principal"] == {"AWS": {"Fn::GetAtt": ["ServiceRole", "Arn"]}}
        assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]


def test_template__service_role__reads_no_item_itself(template: dict[str, Any]) -> None:
    statements = template["Resources"]["ServicePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    actions = {action for statement in statements for action in statement["Action"]}
    assert actions == {"sts:AssumeRole", "sts:TagSession", "dynamodb:DescribeTable"}
    assert "Policies" not in template["Resources"]["ServiceRole"]["Properties"]


def test_template__function__configured_for_the_roles_and_the_table(template: dict[str, Any]) -> None:
    function = template["Resources"]["Function"]["Properties"]
    assert function["Handler"] == "graphql_api.lambda_handler.handler"
    assert function["Runtime"] == "python3.11"
    variables = function["Environment"]["Variables"]
    assert variables["DYNAMODB_ENDPOINT"] == "aws"
    assert variables["HR_ENV"] == "production"
    assert variables["ALLOWED_HOSTS"] == "*"  # API Gateway answers only for the API's own domains
    assert variables["HR_TABLE_NAME"] == {"Ref": "Table"}
    for role, setting in cloudformation.ROLE_SETTINGS.items():
        assert variables[setting] == {"Fn::GetAtt": [cloudformation.ROLE_RESOURCES[role], "Arn"]}


def test_template__alarms__on_errors_and_throttles(template: dict[str, Any]) -> None:
    alarms = {
        (resource["Properties"]["Namespace"], resource["Properties"]["MetricName"])
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
    }
    assert {("AWS/Lambda", "Errors"), ("AWS/Lambda", "Throttles"), ("AWS/DynamoDB", "ReadThrottleEvents")} <= alarms

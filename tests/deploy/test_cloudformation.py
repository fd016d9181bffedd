"""The CloudFormation template: valid, and built from the same definitions the code uses."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import httpx
import pytest

from datastore.aws import iam
from datastore.upkeep import provision
from deploy import cloudformation
from graphql_api.observability import emf
from tests.graphql_api.entrypoints.test_lambda_handler import graphql_event, imported_entry, token_for
from tests.graphql_api.fixtures import TEST_SECRET, Demo
from tests.graphql_api.observability.logs import captured_lines
from tests.paths import ROOT
from tests.tcp_proxy import Mode, TcpProxy

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
    # The stream as CloudFormation spells it: the view type alone means it is on.
    assert created.pop("StreamSpecification") == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert properties["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
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


def test_template__data_roles__assumable_only_by_the_functions_roles_with_tags(template: dict[str, Any]) -> None:
    functions_roles = [
        {"Fn::GetAtt": [role, "Arn"]}
        for role in (
            "ServiceRole",
            "LiveRole",
            "FanOutRole",
            "WebhookStreamRole",
            "WebhookQueueRole",
            "WebhookSweepRole",
        )
    ]
    for resource in cloudformation.ROLE_RESOURCES.values():
        (statement,) = template["Resources"][resource]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert statement["Principal"] == {"AWS": functions_roles}
        assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]


def test_template__service_role__reads_no_item_itself(template: dict[str, Any]) -> None:
    statements = template["Resources"]["ServicePolicy"]["Properties"]["PolicyDocument"]["Statement"]
    actions = {action for statement in statements for action in statement["Action"]}
    assert actions == {"sts:AssumeRole", "sts:TagSession", "dynamodb:DescribeTable", "secretsmanager:GetSecretValue"}
    (secret,) = [statement for statement in statements if statement["Action"] == ["secretsmanager:GetSecretValue"]]
    assert secret["Resource"] == [{"Ref": "JwtSecret"}]  # that one secret only
    assert "Policies" not in template["Resources"]["ServiceRole"]["Properties"]


def test_template__function__configured_for_the_roles_and_the_table(template: dict[str, Any]) -> None:
    function = template["Resources"]["Function"]["Properties"]
    assert function["Handler"] == "graphql_api.entrypoints.lambda_handler.handler"
    assert function["Runtime"] == "python3.11"
    variables = function["Environment"]["Variables"]
    assert variables["DYNAMODB_ENDPOINT"] == "aws"
    assert variables["HR_ENV"] == "production"
    assert variables["ALLOWED_HOSTS"] == "*"  # API Gateway answers only for the API's own domains
    assert variables["HR_TABLE_NAME"] == {"Ref": "Table"}
    for role, setting in cloudformation.ROLE_SETTINGS.items():
        assert variables[setting] == {"Fn::GetAtt": [cloudformation.ROLE_RESOURCES[role], "Arn"]}


def test_template__token_secret__generated_in_secrets_manager_and_read_by_its_arn(template: dict[str, Any]) -> None:
    secret = template["Resources"]["JwtSecret"]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32
    variables = template["Resources"]["Function"]["Properties"]["Environment"]["Variables"]
    assert variables["JWT_SECRET_ARN"] == {"Ref": "JwtSecret"}  # graphql_api/settings/secrets.py reads it
    assert "JWT_SECRET" not in variables
    assert "JwtSecret" not in template["Parameters"]
    assert "resolve:secretsmanager" not in json.dumps(template)  # no dynamic reference into plain variables


def test_template__reserved_concurrency__a_parameter_none_by_default(template: dict[str, Any]) -> None:
    parameter = template["Parameters"]["ReservedConcurrency"]
    assert (parameter["Type"], parameter["Default"]) == ("Number", -1)
    reserved = template["Resources"]["Function"]["Properties"]["ReservedConcurrentExecutions"]
    assert reserved == {"Fn::If": ["HasReservedConcurrency", {"Ref": "ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]}
    assert template["Conditions"]["HasReservedConcurrency"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "ReservedConcurrency"}, "-1"]}]
    }


def test_template__log_groups__encrypted_by_a_retained_key_and_kept_after_the_stack(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    key = resources["LogKey"]
    assert key["Type"] == "AWS::KMS::Key"
    assert (key["DeletionPolicy"], key["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert key["Properties"]["EnableKeyRotation"] is True
    (logs,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if "Service" in s["Principal"]]
    assert logs["Principal"]["Service"] == {"Fn::Sub": "logs.${AWS::Region}.amazonaws.com"}
    allowed = logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    for name in ("LogGroup", "AccessLogGroup"):
        group = resources[name]
        assert (group["DeletionPolicy"], group["UpdateReplacePolicy"]) == ("Retain", "Retain")
        assert group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": ["LogKey", "Arn"]}
        log_group_name = group["Properties"]["LogGroupName"]["Fn::Sub"]
        assert any(arn["Fn::Sub"].endswith(f"log-group:{log_group_name}") for arn in allowed), name
    function = resources["Function"]["Properties"]
    assert function["LoggingConfig"]["LogGroup"] == {"Ref": "LogGroup"}


def test_template__stage__access_logs_as_json_lines(template: dict[str, Any]) -> None:
    settings = template["Resources"]["HttpApiStage"]["Properties"]["AccessLogSettings"]
    assert settings["DestinationArn"] == {"Fn::GetAtt": ["AccessLogGroup", "Arn"]}
    line = json.loads(settings["Format"])
    assert {"requestId", "status", "responseLatencyMs", "integrationError"} <= set(line)
    assert all(value.startswith("$context.") for value in line.values())


def test_template__alarm_topic__email_subscription_only_when_given(template: dict[str, Any]) -> None:
    subscription = template["Resources"]["AlarmEmailSubscription"]
    assert subscription["Condition"] == "HasAlarmEmail"
    assert subscription["Properties"] == {
        "TopicArn": {"Ref": "AlarmTopic"},
        "Protocol": "email",
        "Endpoint": {"Ref": "AlarmEmail"},
    }
    assert template["Parameters"]["AlarmEmail"]["Default"] == ""


def alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: resource["Properties"]
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
    }


def metrics_of(alarm: dict[str, Any]) -> list[tuple[str, str, frozenset[str]]]:
    """(namespace, metric, dimension names) of each metric an alarm reads."""
    if "Metrics" not in alarm:
        names = frozenset(d["Name"] for d in alarm.get("Dimensions", []))
        return [(alarm["Namespace"], alarm["MetricName"], names)]
    return [
        (m["Namespace"], m["MetricName"], frozenset(d["Name"] for d in m["Dimensions"]))
        for m in (query["MetricStat"]["Metric"] for query in alarm["Metrics"] if "MetricStat" in query)
    ]


def test_template__alarms__each_over_a_window_to_the_topic(template: dict[str, Any]) -> None:
    found = alarms(template)
    assert len(found) == 19
    for name, alarm in found.items():
        # A sustained problem: several one-minute datapoints out of a longer window, never one event.
        assert alarm["EvaluationPeriods"] == cloudformation.ALARM_EVALUATION_PERIODS == 5, name
        assert alarm["DatapointsToAlarm"] == cloudformation.ALARM_DATAPOINTS == 3, name
        assert alarm.get("Period", 60) == 60, name
        assert all(q.get("MetricStat", {}).get("Period", 60) == 60 for q in alarm.get("Metrics", [])), name
        assert alarm["TreatMissingData"] == "notBreaching", name  # sparse metrics: no data, no problem
        assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": "AlarmTopic"}], name


def test_template__alarms__outages_latency_and_dynamodb(template: dict[str, Any]) -> None:
    read = {metric for alarm in alarms(template).values() for metric in metrics_of(alarm)}
    table, index = frozenset({"TableName"}), frozenset({"TableName", "GlobalSecondaryIndexName"})
    assert {
        ("AWS/Lambda", "Errors", frozenset({"FunctionName"})),
        ("AWS/Lambda", "Throttles", frozenset({"FunctionName"})),
        ("AWS/ApiGateway", "5xx", frozenset({"ApiId", "Stage"})),
        ("HrApi", "Errors.UNAVAILABLE", frozenset()),
        ("HrApi", "Errors.TIMEOUT", frozenset()),
        ("HrApi", "Latency", frozenset()),
        ("AWS/DynamoDB", "SystemErrors", frozenset({"TableName", "Operation"})),
        ("AWS/DynamoDB", "ReadThrottleEvents", table),
        ("AWS/DynamoDB", "ReadThrottleEvents", index),
        ("AWS/DynamoDB", "WriteThrottleEvents", table),
        ("AWS/DynamoDB", "WriteThrottleEvents", index),
        ("AWS/Lambda", "IteratorAge", frozenset({"FunctionName"})),
        ("AWS/ApiGateway", "IntegrationError", frozenset({"ApiId", "Stage"})),
        ("AWS/ApiGateway", "ExecutionError", frozenset({"ApiId", "Stage"})),
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", frozenset({"QueueName"})),
        ("HrApi", "WebhookDeliveryErrors", frozenset()),
    } == read
    latency = alarms(template)["LatencyP95Alarm"]
    assert (latency["ExtendedStatistic"], latency["Threshold"]) == ("p95", {"Ref": "LatencyP95Milliseconds"})


def test_template__live_alarms__both_live_functions_the_fan_out_s_lag_and_the_websocket_api(
    template: dict[str, Any],
) -> None:
    found = alarms(template)

    def reads(name: str) -> list[tuple[str, str, list[Any]]]:
        alarm = found[name]
        if "Metrics" not in alarm:
            return [(alarm["Namespace"], alarm["MetricName"], alarm["Dimensions"])]
        stats = [query["MetricStat"]["Metric"] for query in alarm["Metrics"] if "MetricStat" in query]
        return [(m["Namespace"], m["MetricName"], m["Dimensions"]) for m in stats]

    live = [{"Name": "FunctionName", "Value": {"Ref": "LiveFunction"}}]
    fan_out = [{"Name": "FunctionName", "Value": {"Ref": "FanOutFunction"}}]
    websocket = [{"Name": "ApiId", "Value": {"Ref": "WebSocketApi"}}, {"Name": "Stage", "Value": "live"}]
    assert reads("LiveFunctionErrorsAlarm") == [("AWS/Lambda", "Errors", live)]
    assert reads("FanOutFunctionErrorsAlarm") == [("AWS/Lambda", "Errors", fan_out)]
    assert reads("LiveFunctionThrottlesAlarm") == [
        ("AWS/Lambda", "Throttles", live),
        ("AWS/Lambda", "Throttles", fan_out),
    ]
    assert reads("FanOutIteratorAgeAlarm") == [("AWS/Lambda", "IteratorAge", fan_out)]
    age = found["FanOutIteratorAgeAlarm"]
    assert (age["Statistic"], age["Threshold"], age["ComparisonOperator"]) == (
        "Maximum",
        60_000,
        "GreaterThanThreshold",
    )
    assert reads("WebSocketErrorsAlarm") == [
        ("AWS/ApiGateway", "IntegrationError", websocket),
        ("AWS/ApiGateway", "ExecutionError", websocket),
    ]
    # The stage the alarm names is the WebSocket API's own.
    assert template["Resources"]["WebSocketStage"]["Properties"]["StageName"] == "live"


def test_template__system_errors__summed_over_every_operation_the_server_sends(template: dict[str, Any]) -> None:
    alarm = alarms(template)["TableSystemErrorsAlarm"]
    operations = {
        d["Value"]
        for query in alarm["Metrics"]
        if "MetricStat" in query
        for d in query["MetricStat"]["Metric"]["Dimensions"]
        if d["Name"] == "Operation"
    }
    assert [query for query in alarm["Metrics"] if query["ReturnData"]] == [
        {"Id": "total", "Expression": "SUM(METRICS())", "Label": alarm["AlarmDescription"], "ReturnData": True}
    ]
    # The DynamoDB operations datastore/table/scoped.py sends (``send(self.client, "GetItem", ...)``, and
    # the single writes by name in its table of them), by their names in its source.
    operation_names = set(boto3.client("dynamodb", region_name="eu-west-1").meta.method_to_api_mapping.values())
    source = (ROOT / "datastore" / "table" / "scoped.py").read_text()
    called = {name for name in re.findall(r'"(\w+)"', source) if name in operation_names}
    assert operations == set(cloudformation.DATA_OPERATIONS) == called


def settle(entry: ModuleType) -> None:
    """Invoke ``entry`` until the loads the deadline left behind have ended on its event loop.

    Lambda runs the loop only during an invocation: the timed-out request's load finishes
    (its call fails past the read timeout) in a later one, as here, before the test closes it.
    """
    loop = asyncio.get_event_loop_policy().get_event_loop()
    deadline = time.monotonic() + 30
    while asyncio.all_tasks(loop) and time.monotonic() < deadline:
        time.sleep(0.5)
        entry.handler(graphql_event("{ __typename }", None), None)


def test_template__hrapi_alarms__read_the_metrics_the_function_emits(
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    dynamodb_endpoint: str,
    table_name: str,
    demo: Demo,
    tmp_path: Path,
) -> None:
    """The Lambda entry answers a request, one with DynamoDB down and one past its deadline; every
    HrApi metric an alarm reads (name and dimensions) is among those their EMF lines carried."""
    upstream = httpx.URL(dynamodb_endpoint).port
    assert upstream is not None
    monkeypatch.setenv("JWT_SECRET", TEST_SECRET)
    monkeypatch.setenv("REQUEST_TIMEOUT_SECONDS", "0.5")
    token = token_for(demo.person("alice@acme.co"))
    statuses = []
    with (
        TcpProxy(upstream) as proxy,
        imported_entry(monkeypatch, proxy.endpoint_url, table_name, tmp_path) as entry,
        captured_lines() as captured,
    ):
        for mode in (Mode.PASS, Mode.DROP, Mode.SWALLOW):
            proxy.mode = mode
            statuses.append(entry.handler(graphql_event("{ me { email } }", token), None)["statusCode"])
        lines = captured.lines()
        proxy.mode = Mode.PASS
        settle(entry)

    assert statuses == [200, 503, 504]
    emitted = {
        (directive["Namespace"], metric["Name"], frozenset(dimensions))
        for line in lines
        if "_aws" in line
        for directive in line["_aws"]["CloudWatchMetrics"]
        for dimensions in directive["Dimensions"]
        for metric in directive["Metrics"]
    }
    read = {
        metric
        for name, alarm in alarms(template).items()
        if not name.startswith(
            "Webhook"
        )  # the webhooks functions' (tests/graphql_api/entrypoints/test_lambda_webhooks.py)
        for metric in metrics_of(alarm)
        if metric[0] == emf.NAMESPACE
    }
    assert read == {
        (emf.NAMESPACE, "Errors.UNAVAILABLE", frozenset()),
        (emf.NAMESPACE, "Errors.TIMEOUT", frozenset()),
        (emf.NAMESPACE, "Latency", frozenset()),
    }
    assert read <= emitted, read - emitted


# --- live updates on AWS -----------------------------------------------------------------------


def test_template__websocket_api__three_routes_to_the_live_function(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    assert resources["WebSocketApi"]["Properties"]["ProtocolType"] == "WEBSOCKET"
    routes = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Route"]
    live = sorted(r["RouteKey"] for r in routes if r["ApiId"] == {"Ref": "WebSocketApi"})
    assert live == ["$connect", "$default", "$disconnect"]
    integration = resources["WebSocketIntegration"]["Properties"]
    assert "${LiveFunction.Arn}" in integration["IntegrationUri"]["Fn::Sub"]
    function = resources["LiveFunction"]["Properties"]
    assert function["Handler"] == "graphql_api.entrypoints.lambda_live.connection_handler"
    assert function["Environment"]["Variables"] == resources["Function"]["Properties"]["Environment"]["Variables"]
    permission = resources["WebSocketInvokePermission"]["Properties"]
    assert permission["FunctionName"] == {"Ref": "LiveFunction"}
    assert "${WebSocketApi}" in permission["SourceArn"]["Fn::Sub"]
    assert resources["WebSocketStage"]["Properties"]["StageName"] == cloudformation.LIVE_STAGE


def test_template__fan_out__on_the_table_s_stream_filtered_to_what_it_delivers(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    mapping = resources["FanOutEventSource"]["Properties"]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["Table", "StreamArn"]}
    assert mapping["FunctionName"] == {"Ref": "FanOutFunction"}
    assert mapping["BisectBatchOnFunctionError"] is True
    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    kinds = {(p["eventName"][0], kind) for p in patterns for kind in p["dynamodb"]["NewImage"]["entity"]["S"]}
    assert kinds == {
        ("INSERT", "AuditEvent"),
        ("MODIFY", "Employee"),
        ("MODIFY", "Organization"),
        ("MODIFY", "ApiKey"),
        # A session's end and a sign-out everywhere (its mark's first write is an INSERT).
        ("MODIFY", "Session"),
        ("INSERT", "SignedOut"),
        ("MODIFY", "SignedOut"),
    }
    handler = resources["FanOutFunction"]["Properties"]["Handler"]
    assert handler == "graphql_api.entrypoints.lambda_live.stream_handler"


def test_template__live_roles__manage_this_api_s_connections__only_the_fan_out_reads_the_stream(
    template: dict[str, Any],
) -> None:
    resources = template["Resources"]
    live = resources["LivePolicy"]["Properties"]
    assert live["Roles"] == [{"Ref": "LiveRole"}, {"Ref": "FanOutRole"}]
    (manage,) = [s for s in live["PolicyDocument"]["Statement"] if s["Action"] == ["execute-api:ManageConnections"]]
    (arn,) = manage["Resource"]
    assert arn["Fn::Sub"].endswith(":${WebSocketApi}/*")
    actions = {a for s in live["PolicyDocument"]["Statement"] for a in s["Action"]}
    assert not [a for a in actions if a.startswith("dynamodb:") and a != "dynamodb:DescribeTable"]  # no item
    stream = resources["FanOutStreamPolicy"]["Properties"]
    assert stream["Roles"] == [{"Ref": "FanOutRole"}]
    (statement,) = stream["PolicyDocument"]["Statement"]
    assert statement["Resource"] == [{"Fn::GetAtt": ["Table", "StreamArn"]}]
    for role in ("ServiceRole", "LiveRole"):
        attached = [
            r
            for r in resources.values()
            if r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r["Properties"]["Roles"]
        ]
        assert not [
            s
            for p in attached
            for s in p["Properties"]["PolicyDocument"]["Statement"]
            if "dynamodb:GetRecords" in s["Action"]
        ]


# --- webhooks on AWS ---------------------------------------------------------------------------


def test_template__webhook_queue__standard_with_a_dead_letter_queue_and_a_visibility_above_the_attempt(
    template: dict[str, Any],
) -> None:
    resources = template["Resources"]
    queue = resources["WebhookQueue"]["Properties"]
    assert "FifoQueue" not in queue  # SQS delays single messages (the retry schedule) on standard queues only
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["WebhookDeadLetterQueue", "Arn"]},
        "maxReceiveCount": 5,
    }
    consumer = resources["WebhookQueueFunction"]["Properties"]
    # Above the function's timeout (which is above the 15 s attempt and its bookkeeping), six times it.
    assert consumer["Timeout"] > 15 + 15
    assert queue["VisibilityTimeout"] == 6 * consumer["Timeout"]
    assert resources["WebhookDeadLetterQueue"]["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    # The sweep resends only what has been overdue longer than a message may still be in the queue.
    variables = consumer["Environment"]["Variables"]
    assert float(variables["WEBHOOK_QUEUE_LOST_AFTER_SECONDS"]) == queue["VisibilityTimeout"] * 5
    assert variables["WEBHOOK_QUEUE_URL"] == {"Ref": "WebhookQueue"}


def test_template__webhook_functions__the_stream_the_queue_and_the_sweep_s_schedule_wired(
    template: dict[str, Any],
) -> None:
    resources = template["Resources"]
    handlers = {
        name: resources[f"{name}Function"]["Properties"]["Handler"]
        for name in ("WebhookStream", "WebhookQueue", "WebhookSweep")
    }
    assert handlers == {
        "WebhookStream": "graphql_api.entrypoints.lambda_webhooks.stream_handler",
        "WebhookQueue": "graphql_api.entrypoints.lambda_webhooks.queue_handler",
        "WebhookSweep": "graphql_api.entrypoints.lambda_webhooks.sweep_handler",
    }
    stream = resources["WebhookStreamEventSource"]["Properties"]
    assert stream["EventSourceArn"] == {"Fn::GetAtt": ["Table", "StreamArn"]}
    assert stream["FunctionName"] == {"Ref": "WebhookStreamFunction"}
    (pattern,) = [json.loads(f["Pattern"]) for f in stream["FilterCriteria"]["Filters"]]
    assert pattern == {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"entity": {"S": ["AuditEvent"]}}}}
    queue = resources["WebhookQueueEventSource"]["Properties"]
    assert queue["EventSourceArn"] == {"Fn::GetAtt": ["WebhookQueue", "Arn"]}
    assert queue["FunctionName"] == {"Ref": "WebhookQueueFunction"}
    assert queue["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert 1 <= queue["BatchSize"] <= 10
    rule = resources["WebhookSweepSchedule"]["Properties"]
    assert rule["ScheduleExpression"].startswith("rate(")
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["WebhookSweepFunction", "Arn"]}
    permission = resources["WebhookSweepInvokePermission"]["Properties"]
    assert (permission["Principal"], permission["SourceArn"]) == (
        "events.amazonaws.com",
        {"Fn::GetAtt": ["WebhookSweepSchedule", "Arn"]},
    )
    # With the queue delivering, the API's processes run no dispatcher.
    for function in ("Function", "WebhookQueueFunction"):
        assert resources[function]["Properties"]["Environment"]["Variables"]["WEBHOOKS"] == "queue"
    assert "JWT_SECRET_ARN" not in resources["WebhookQueueFunction"]["Properties"]["Environment"]["Variables"]


def test_template__webhook_roles__least_privilege(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    queue = {"Fn::GetAtt": ["WebhookQueue", "Arn"]}

    def statements(role: str) -> list[dict[str, Any]]:
        return [
            statement
            for resource in resources.values()
            if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in resource["Properties"]["Roles"]
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        ]

    expected = {
        "WebhookStreamRole": {
            "dynamodb:DescribeStream",
            "dynamodb:GetRecords",
            "dynamodb:GetShardIterator",
            "dynamodb:ListStreams",
            "sqs:SendMessage",
        },
        "WebhookQueueRole": {
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
            "sqs:ChangeMessageVisibility",
            "sqs:SendMessage",
        },
        "WebhookSweepRole": {"sqs:SendMessage"},
    }
    for role, actions in expected.items():
        found = statements(role)
        # Items only through the data roles (LeadingKeys), as every other function.
        assert {a for s in found for a in s["Action"]} == actions | {"sts:AssumeRole", "sts:TagSession"}, role
        for statement in found:
            if any(action.startswith("sqs:") for action in statement["Action"]):
                assert statement["Resource"] == [queue], role  # that queue only
    for role in ("ServiceRole", "LiveRole", "FanOutRole"):
        assert not [s for s in statements(role) if any(a.startswith("sqs:") for a in s["Action"])], role


def test_template__webhook_alarms__dead_letters_functions_lag_and_delivery_errors(template: dict[str, Any]) -> None:
    found = alarms(template)
    dead = found["WebhookDeadLetterAlarm"]
    assert (dead["Namespace"], dead["MetricName"], dead["Statistic"]) == (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        "Maximum",
    )
    assert dead["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["WebhookDeadLetterQueue", "QueueName"]}}
    ]
    assert (dead["Threshold"], dead["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    consumer = found["WebhookQueueFunctionErrorsAlarm"]
    assert (consumer["MetricName"], consumer["Dimensions"]) == (
        "Errors",
        [{"Name": "FunctionName", "Value": {"Ref": "WebhookQueueFunction"}}],
    )
    errors = found["WebhookDeliveryErrorsAlarm"]
    assert (errors["Namespace"], errors["MetricName"]) == ("HrApi", "WebhookDeliveryErrors")
    lag = found["WebhookStreamIteratorAgeAlarm"]
    assert lag["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": "WebhookStreamFunction"}}]
    both = {
        q["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Ref"]
        for q in found["WebhookFeedFunctionsErrorsAlarm"]["Metrics"]
        if "MetricStat" in q
    }
    assert both == {"WebhookStreamFunction", "WebhookSweepFunction"}

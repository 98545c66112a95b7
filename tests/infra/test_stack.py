"""Template assertions for every resource and property the stack defines, in two configurations (plus a third
for the VPC-without-security-groups and no-access-entries branches)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, get_args

import pytest
from infra.construct import KUBERNETES_GROUP
from infra.log_queries import DASHBOARD_QUERIES
from infra.observability import METRIC_WIDGETS

from drain_orchestrator import workflow_settings
from drain_orchestrator.interruption import Kind
from drain_orchestrator.workflow import liveness_flow, sweep_flow
from tests.infra.conftest import RBAC_APPLIER_PREFIX, Synthesized

DURABLE_POLICY = "service-role/AWSLambdaBasicDurableExecutionRolePolicy"
VPC_POLICY = "service-role/AWSLambdaVPCAccessExecutionRole"
DRAIN_STATES = ["stopping", "stopped", "shutting-down", "terminated"]


def logical_id(synth: Synthesized, type_name: str, contains: str) -> str:
    matches = [k for k in synth.resources(type_name) if contains in k]
    assert len(matches) == 1, f"{type_name} *{contains}*: {matches}"
    return matches[0]


def alias_ref(synth: Synthesized) -> dict[str, str]:
    return {"Ref": logical_id(synth, "AWS::Lambda::Alias", "LiveAlias")}


def queue_arn(synth: Synthesized, name: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [logical_id(synth, "AWS::SQS::Queue", name), "Arn"]}


def statements(synth: Synthesized) -> list[dict[str, Any]]:
    """Every statement of the policies attached to the function's role (its default policy and the durable one)."""
    role = {"Ref": logical_id(synth, "AWS::IAM::Role", "ServiceRole")}
    policies = [p for p in synth.resources("AWS::IAM::Policy").values() if role in p["Properties"]["Roles"]]
    return [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]


def by_sid(synth: Synthesized) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in statements(synth) if "Sid" in s}


def managed_policies(synth: Synthesized) -> list[str]:
    role = synth.drainer("AWS::IAM::Role")
    return [json.dumps(arn) for arn in role.get("ManagedPolicyArns", [])]


def rule_patterns(synth: Synthesized) -> dict[str, dict[str, Any]]:
    rules = synth.resources("AWS::Events::Rule").items()
    return {k: v["Properties"]["EventPattern"] for k, v in rules if "EventPattern" in v["Properties"]}


def pattern_for(synth: Synthesized, detail_type: str) -> dict[str, Any] | None:
    found = [p for p in rule_patterns(synth).values() if p["detail-type"] == [detail_type]]
    assert len(found) <= 1
    return found[0] if found else None


def arn_text(value: object) -> str:
    """A Fn::Join ARN flattened to text, pseudo parameters as <AWS::...>."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(arn_text(part) for part in value["Fn::Join"][1])
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    return str(value)


# --- function -----------------------------------------------------------------------------------------------


def test_function_runtime_architecture_durable_logging(single: Synthesized) -> None:
    fn = single.drainer("AWS::Lambda::Function")
    assert fn["Runtime"] == "python3.13"
    assert fn["Architectures"] == ["arm64"]
    assert fn["Handler"] == "drain_orchestrator.handler.handler"
    assert fn["DurableConfig"]["ExecutionTimeout"] >= 48 * 3600  # the lifecycle hook's global limit
    assert fn["DurableConfig"]["RetentionPeriodInDays"] == 14
    assert fn["Timeout"] == 600 and fn["MemorySize"] == 512
    assert "ReservedConcurrentExecutions" not in fn
    assert "VpcConfig" not in fn
    log_group = logical_id(single, "AWS::Logs::LogGroup", "LogGroup")
    assert fn["LoggingConfig"] == {
        "LogFormat": "JSON",
        "ApplicationLogLevel": "INFO",
        "SystemLogLevel": "INFO",
        "LogGroup": {"Ref": log_group},
    }
    group = single.raw["Resources"][log_group]
    assert group["Properties"]["RetentionInDays"] == 30
    assert group["DeletionPolicy"] == "Retain"


def test_function_waits_for_its_policy(single: Synthesized) -> None:
    function = single.raw["Resources"][logical_id(single, "AWS::Lambda::Function", "DrainOrchestratorFunction")]
    assert function["DependsOn"] == [logical_id(single, "AWS::IAM::Policy", "DefaultPolicy")]


def test_function_environment(single: Synthesized) -> None:
    env = single.drainer("AWS::Lambda::Function")["Environment"]["Variables"]
    topic = logical_id(single, "AWS::SNS::Topic", "NotificationTopic")
    assert env == {
        "CLUSTER_NAMES": "prod",
        "ACTION_REBALANCE": "cordon",
        "ACTION_SPOT_INTERRUPTION": "drain",
        "ACTION_CAPACITY_RESERVATION_INTERRUPTION": "drain",
        "ACTION_STATE_CHANGE": "drain",
        "ACTION_SCHEDULED_CHANGE": "drain",
        "ACTION_CAPACITY_BLOCK": "drain",
        "LIFECYCLE_HOOK_NAMES": "drain-orchestrator",
        "NOTIFICATION_TOPIC_ARN": {"Ref": topic},
        "POWERTOOLS_SERVICE_NAME": "drain-orchestrator",
        "POWERTOOLS_METRICS_NAMESPACE": "DrainOrchestrator",
        "LOG_LEVEL": "INFO",
        "SURGE_SWEEP_MINUTES": "15",
        # the default settings' bound, checked at synth: no simulation of it at the function's cold start
        "DRAIN_SETTINGS_BOUND_CHECKED": workflow_settings.bound_digest(workflow_settings.WorkflowSettings()),
    }


def test_function_options_from_context(multi: Synthesized) -> None:
    fn = multi.drainer("AWS::Lambda::Function")
    assert fn["ReservedConcurrentExecutions"] == 20
    assert (fn["MemorySize"], fn["Timeout"]) == (1024, 900)
    assert fn["DurableConfig"]["ExecutionTimeout"] == 48 * 3600
    assert fn["LoggingConfig"]["ApplicationLogLevel"] == "DEBUG"
    assert fn["Environment"]["Variables"]["CLUSTER_NAMES"] == "prod,staging,batch"
    assert fn["Environment"]["Variables"]["OWNERSHIP_TAG"] == "example.com/eks-cluster"
    assert fn["Environment"]["Variables"]["ACTION_STATE_CHANGE"] == "cordon"
    assert fn["Environment"]["Variables"]["DRAIN_GRACE_PERIOD"] == "30"  # drainSettings pass-through
    assert fn["Environment"]["Variables"]["MAX_CONCURRENT_NODES"] == "8"
    assert multi.only("AWS::Logs::LogGroup")["RetentionInDays"] == 90


def test_vpc_placement(multi: Synthesized) -> None:
    vpc_config = multi.drainer("AWS::Lambda::Function")["VpcConfig"]
    assert vpc_config["SubnetIds"] == ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]
    assert vpc_config["SecurityGroupIds"] == ["sg-0ccccccccccccccc3"]
    assert multi.resources("AWS::EC2::SecurityGroup") == {}  # given groups are used, none created
    assert any(VPC_POLICY in arn for arn in managed_policies(multi))


def test_vpc_without_security_groups_creates_one(
    synth: Callable[[Mapping[str, Any]], Synthesized],
) -> None:
    result = synth(
        {
            "clusters": "prod",
            "vpcId": "vpc-0123456789abcdef0",
            "subnetIds": "subnet-0aaaaaaaaaaaaaaa1",
            "createAccessEntries": "false",
        }
    )
    group = result.only("AWS::EC2::SecurityGroup")
    assert group["VpcId"] == "vpc-0123456789abcdef0"
    assert group["SecurityGroupEgress"][0]["CidrIp"] == "0.0.0.0/0"
    assert "SecurityGroupIngress" not in group
    sg_id = logical_id(result, "AWS::EC2::SecurityGroup", "SecurityGroup")
    vpc_config = result.drainer("AWS::Lambda::Function")["VpcConfig"]
    assert vpc_config["SecurityGroupIds"] == [{"Fn::GetAtt": [sg_id, "GroupId"]}]
    # CONFIG_MAP clusters: no access entries, the aws-auth route is used instead
    assert result.resources("AWS::EKS::AccessEntry") == {}


# --- alias and async invoke ---------------------------------------------------------------------------------


def test_alias_is_the_only_invoke_target(single: Synthesized) -> None:
    alias = single.only("AWS::Lambda::Alias")
    assert alias["Name"] == "live"
    assert alias["FunctionVersion"]["Fn::GetAtt"][1] == "Version"
    permissions = single.resources("AWS::Lambda::Permission")
    # seven kinds, the two Capacity Block kinds' one rule, the surge sweep, the liveness check
    assert len(permissions) == len(single.resources("AWS::Events::Rule")) == 10
    for permission in permissions.values():
        props = permission["Properties"]
        assert props["FunctionName"] == alias_ref(single)  # never the unqualified function
        assert props["Principal"] == "events.amazonaws.com"
        assert props["SourceArn"]["Fn::GetAtt"][1] == "Arn"


def test_async_invoke_config_on_the_alias(single: Synthesized) -> None:
    config = single.only("AWS::Lambda::EventInvokeConfig")
    assert config["Qualifier"] != "$LATEST"
    assert config["Qualifier"]["Fn::Select"][1]["Fn::Split"][1] == alias_ref(single)
    assert config["MaximumRetryAttempts"] == 2
    assert config["MaximumEventAgeInSeconds"] == 6 * 3600
    assert config["DestinationConfig"]["OnFailure"]["Destination"] == queue_arn(single, "FailedInvocationQueue")


# --- EventBridge --------------------------------------------------------------------------------------------


def test_one_rule_per_kind_with_reference_patterns(single: Synthesized) -> None:
    # lifecycle actions of our hook only: another tool's hook on the same ASG never invokes the function
    assert pattern_for(single, "EC2 Instance-terminate Lifecycle Action") == {
        "source": ["aws.autoscaling"],
        "detail-type": ["EC2 Instance-terminate Lifecycle Action"],
        "detail": {"LifecycleHookName": ["drain-orchestrator"]},
    }
    assert pattern_for(single, "EC2 Instance-launch Lifecycle Action") == {
        "source": ["aws.autoscaling"],
        "detail-type": ["EC2 Instance-launch Lifecycle Action"],
        "detail": {"LifecycleHookName": ["drain-orchestrator"]},
    }
    assert pattern_for(single, "EC2 Spot Instance Interruption Warning") == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Spot Instance Interruption Warning"],
    }
    assert pattern_for(single, "EC2 Capacity Reservation Instance Interruption Warning") == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    }
    assert pattern_for(single, "EC2 Instance Rebalance Recommendation") == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Instance Rebalance Recommendation"],
    }
    assert pattern_for(single, "EC2 Instance State-change Notification") == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Instance State-change Notification"],
        "detail": {"state": DRAIN_STATES},
    }
    assert pattern_for(single, "AWS Health Event") == {
        "source": ["aws.health"],
        "detail-type": ["AWS Health Event"],
        "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]},
    }


def test_rule_targets_alias_with_retry_policy_and_dead_letter_queue(single: Synthesized) -> None:
    dlq = queue_arn(single, "DeliveryDeadLetterQueue")
    for rule in single.resources("AWS::Events::Rule").values():
        (target,) = rule["Properties"]["Targets"]
        assert target["Arn"] == alias_ref(single)
        assert target["RetryPolicy"] == {"MaximumRetryAttempts": 20, "MaximumEventAgeInSeconds": 6 * 3600}
        assert target["DeadLetterConfig"] == {"Arn": dlq}
    # EventBridge may write to the DLQ only on behalf of our rules
    policy = next(
        p["Properties"]["PolicyDocument"]
        for p in single.resources("AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": logical_id(single, "AWS::SQS::Queue", "DeliveryDeadLetterQueue")}]
    )
    senders = [s for s in policy["Statement"] if s.get("Principal") == {"Service": "events.amazonaws.com"}]
    # the seven kinds' rules, the Capacity Block kinds' one, the surge sweep's and the liveness check's schedules
    assert len(senders) == 10
    assert all(s["Condition"]["ArnEquals"]["aws:SourceArn"]["Fn::GetAtt"][1] == "Arn" for s in senders)


def test_surges_left_behind_are_looked_for_on_a_schedule_that_sends_the_sweeps_input(single: Synthesized) -> None:
    (rule,) = [
        r["Properties"]
        for k, r in single.resources("AWS::Events::Rule").items()
        if "ScheduleExpression" in r["Properties"] and "SurgeSweep" in k
    ]
    assert rule["ScheduleExpression"] == "rate(15 minutes)"
    (target,) = rule["Targets"]
    transformer = target["InputTransformer"]
    assert transformer["InputPathsMap"] == {"id": "$.id", "time": "$.time"}
    sent = json.loads(transformer["InputTemplate"].replace("<id>", '"id"').replace("<time>", '"t"'))
    assert sweep_flow.is_sweep(sent) and sent["id"] == "id"


@pytest.mark.parametrize("config", ["single", "multi"])
def test_a_liveness_check_is_scheduled_every_half_hour_with_the_functions_input(
    config: str, request: pytest.FixtureRequest
) -> None:
    synth: Synthesized = request.getfixturevalue(config)
    (rule,) = [r["Properties"] for k, r in synth.resources("AWS::Events::Rule").items() if "LivenessRule" in k]
    assert rule["ScheduleExpression"] == "rate(30 minutes)"
    (target,) = rule["Targets"]
    assert target["Arn"] == alias_ref(synth)
    transformer = target["InputTransformer"]
    sent = json.loads(transformer["InputTemplate"].replace("<id>", '"id"').replace("<time>", '"t"'))
    assert liveness_flow.is_liveness(sent) and not sweep_flow.is_sweep(sent)


def test_lifecycle_rules_scoped_to_served_asgs_and_hooks(multi: Synthesized) -> None:
    scope = {
        "AutoScalingGroupName": ["prod-workers", "staging-workers", "batch-spot"],
        "LifecycleHookName": ["node-drainer", "drain-orchestrator"],
    }
    for detail_type in ("EC2 Instance-terminate Lifecycle Action", "EC2 Instance-launch Lifecycle Action"):
        pattern = pattern_for(multi, detail_type)
        assert pattern is not None
        assert pattern["detail"] == scope


def test_ignored_kind_gets_no_rule(multi: Synthesized) -> None:
    assert pattern_for(multi, "EC2 Instance Rebalance Recommendation") is None  # actionRebalance=ignore
    # and no surge sweep schedule (surgeSweepMinutes=0); the liveness check's
    assert len(multi.resources("AWS::Events::Rule")) == 8
    assert "SURGE_SWEEP_MINUTES" not in multi.drainer("AWS::Lambda::Function")["Environment"]["Variables"]
    assert multi.drainer("AWS::Lambda::Function")["Environment"]["Variables"]["ACTION_REBALANCE"] == "ignore"


# --- queues and topics --------------------------------------------------------------------------------------


def test_queues_encrypted_tls_only_14_days(single: Synthesized) -> None:
    queues = single.resources("AWS::SQS::Queue")
    assert len(queues) == 2
    for queue in queues.values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
        assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    for policy in single.resources("AWS::SQS::QueuePolicy").values():
        deny = policy["Properties"]["PolicyDocument"]["Statement"][0]
        assert deny["Effect"] == "Deny"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_topics_and_alarm_email(single: Synthesized, multi: Synthesized) -> None:
    assert len(single.resources("AWS::SNS::Topic")) == 2
    assert single.resources("AWS::SNS::Subscription") == {}
    subscription = multi.only("AWS::SNS::Subscription")
    assert subscription["Protocol"] == "email"
    assert subscription["Endpoint"] == "oncall@example.com"
    assert subscription["TopicArn"] == {"Ref": logical_id(multi, "AWS::SNS::Topic", "AlarmTopic")}


# --- IAM ----------------------------------------------------------------------------------------------------


def test_least_privilege_actions(single: Synthesized) -> None:
    actions: set[str] = set()
    for statement in statements(single):
        assert statement["Effect"] == "Allow"
        found = statement["Action"]
        actions.update([found] if isinstance(found, str) else found)
    assert actions == {
        "ec2:DescribeInstances",
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLifecycleHooks",
        "autoscaling:DescribeTags",
        "autoscaling:CompleteLifecycleAction",
        "autoscaling:RecordLifecycleActionHeartbeat",
        "eks:DescribeCluster",
        "elasticloadbalancing:DescribeTargetGroups",
        "elasticloadbalancing:DescribeTags",
        "elasticloadbalancing:DescribeTargetHealth",
        "sns:Publish",
        # the on-failure destination is written with the function's role
        "sqs:SendMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
        # Lambda writes the function's logs with its role; the durable SDK checkpoints and reads its state
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "lambda:CheckpointDurableExecution",
        "lambda:GetDurableExecutionState",
    }
    assert not any("*" in action for action in actions)
    assert managed_policies(single) == []  # no AWS-managed durable policy: its grants are on `*`


DESCRIBE_ONLY = {
    "ec2:DescribeInstances",
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLifecycleHooks",
    "autoscaling:DescribeTags",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTags",
    "elasticloadbalancing:DescribeTargetHealth",
}


@pytest.mark.parametrize("config", ["single", "multi"])
def test_no_managed_durable_policy_and_no_star_resource_beyond_the_describe_calls(
    config: str, request: pytest.FixtureRequest
) -> None:
    synth: Synthesized = request.getfixturevalue(config)
    assert not [arn for arn in managed_policies(synth) if DURABLE_POLICY in arn]
    for statement in statements(synth):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if "*" in resources:
            assert set(actions) <= DESCRIBE_ONLY, statement  # those have no resource-level permissions


def test_durable_execution_and_log_grants_name_this_function_and_its_log_group(single: Synthesized) -> None:
    function = logical_id(single, "AWS::Lambda::Function", "DrainOrchestratorFunction")
    durable = next(s for s in statements(single) if "lambda:CheckpointDurableExecution" in s["Action"])
    assert sorted(durable["Action"]) == ["lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"]
    # durable execution ARNs are <function ARN>:<version>/durable-execution/...: every version of this function
    assert durable["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [function, "Arn"]}, ":*"]]}
    logs = next(s for s in statements(single) if "logs:PutLogEvents" in s["Action"])
    assert logs["Resource"] == {"Fn::GetAtt": [logical_id(single, "AWS::Logs::LogGroup", "LogGroup"), "Arn"]}
    # no execution before the durable grant exists: the published version (the alias's, the rules') waits for it
    policy = logical_id(single, "AWS::IAM::Policy", "DurableExecutionPolicy")
    (version,) = single.resources("AWS::Lambda::Version").values()
    assert policy in version["DependsOn"]


def test_scoped_resources(single: Synthesized) -> None:
    sids = by_sid(single)
    assert arn_text(sids["DescribeServedClusters"]["Resource"]) == (
        "arn:<AWS::Partition>:eks:<AWS::Region>:<AWS::AccountId>:cluster/prod"
    )
    publish = next(s for s in statements(single) if s["Action"] == "sns:Publish")
    assert publish["Resource"] == {"Ref": logical_id(single, "AWS::SNS::Topic", "NotificationTopic")}
    send = next(s for s in statements(single) if "sqs:SendMessage" in s["Action"])
    assert send["Resource"] == queue_arn(single, "FailedInvocationQueue")


def test_lifecycle_actions_conditioned_on_cluster_tags(single: Synthesized) -> None:
    sids = by_sid(single)
    tag = sids["LifecycleClusterTag0"]
    assert tag["Condition"] == {
        "StringEquals": {"autoscaling:ResourceTag/kubernetes.io/cluster/prod": ["owned", "shared"]}
    }
    assert sids["LifecycleEksClusterName"]["Condition"] == {
        "StringEquals": {"autoscaling:ResourceTag/eks:cluster-name": ["prod"]}
    }
    for sid in ("LifecycleClusterTag0", "LifecycleEksClusterName"):
        assert arn_text(sids[sid]["Resource"]).endswith(":autoScalingGroup:*:autoScalingGroupName/*")
        assert sorted(sids[sid]["Action"]) == [
            "autoscaling:CompleteLifecycleAction",
            "autoscaling:RecordLifecycleActionHeartbeat",
        ]


def test_multi_cluster_permissions(multi: Synthesized) -> None:
    sids = by_sid(multi)
    assert sorted(arn_text(r).rsplit("/", 1)[1] for r in sids["DescribeServedClusters"]["Resource"]) == [
        "batch",
        "prod",
        "staging",
    ]
    for index, cluster in enumerate(("prod", "staging", "batch")):
        condition = sids[f"LifecycleClusterTag{index}"]["Condition"]["StringEquals"]
        assert condition == {f"autoscaling:ResourceTag/kubernetes.io/cluster/{cluster}": ["owned", "shared"]}
        # scoped to the served ASG names as well
        assert [arn_text(r).rsplit("/", 1)[1] for r in sids[f"LifecycleClusterTag{index}"]["Resource"]] == [
            "prod-workers",
            "staging-workers",
            "batch-spot",
        ]
    assert sids["LifecycleEksClusterName"]["Condition"]["StringEquals"] == {
        "autoscaling:ResourceTag/eks:cluster-name": ["prod", "staging", "batch"]
    }


# --- cluster access -----------------------------------------------------------------------------------------


def test_access_entry_per_cluster(single: Synthesized, multi: Synthesized) -> None:
    role = logical_id(single, "AWS::IAM::Role", "ServiceRole")
    assert single.drainer("AWS::EKS::AccessEntry") == {
        "ClusterName": "prod",
        "PrincipalArn": {"Fn::GetAtt": [role, "Arn"]},
        "Type": "STANDARD",
        "KubernetesGroups": [KUBERNETES_GROUP],
    }
    entries = [e for k, e in multi.resources("AWS::EKS::AccessEntry").items() if not k.startswith(RBAC_APPLIER_PREFIX)]
    assert sorted(e["Properties"]["ClusterName"] for e in entries) == ["batch", "prod", "staging"]
    assert all(e["Properties"]["KubernetesGroups"] == ["drain-orchestrator"] for e in entries)


# --- lifecycle hooks ----------------------------------------------------------------------------------------


def test_lifecycle_hooks_created_on_named_asgs(single: Synthesized, multi: Synthesized) -> None:
    assert single.resources("AWS::AutoScaling::LifecycleHook") == {}
    hooks = sorted(
        (h["Properties"] for h in multi.resources("AWS::AutoScaling::LifecycleHook").values()),
        key=lambda h: h["AutoScalingGroupName"],
    )
    assert hooks == [
        {
            "AutoScalingGroupName": asg,
            "LifecycleHookName": "drain-orchestrator",
            "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
            "HeartbeatTimeout": 900,
            "DefaultResult": "CONTINUE",
        }
        for asg in ("batch-spot", "prod-workers")
    ]


# --- dashboard and alarms -----------------------------------------------------------------------------------


def dashboard(synth: Synthesized) -> dict[str, Any]:
    """The dashboard body as JSON; CloudFormation tokens (always inside JSON strings) become TOKEN."""
    body = synth.only("AWS::CloudWatch::Dashboard")["DashboardBody"]
    parsed: dict[str, Any] = json.loads(
        "".join(part if isinstance(part, str) else "TOKEN" for part in body["Fn::Join"][1])
    )
    return parsed


def test_dashboard_shows_every_metric(single: Synthesized) -> None:
    widgets = dashboard(single)["widgets"]
    titles = [w["properties"]["title"] for w in widgets]
    assert titles == [
        "Alarms",
        *(title for title, _ in METRIC_WIDGETS),
        "Function (live alias)",
        "Dead letters",
        *(query.title for query in DASHBOARD_QUERIES),
    ]
    expressions = {
        line[0]["expression"]
        for w in widgets
        for line in w["properties"].get("metrics", [])
        if isinstance(line[0], dict)
    }
    names = {
        "EventsReceived", "EventsIgnored", "NodesCordoned", "NodesDrained", "LifecycleActionsCompleted",
        "PodsEvicted", "DrainDurationSeconds", "EvictionsBlockedByPDB", "PodsForceDeleted",
        "DrainDeadlineMissed", "Errors", "DrainHeldSeconds", "LifecycleAccessDenied",
    }  # fmt: skip

    def expected(name: str, stat: str) -> str:
        return "SEARCH('Namespace=" + '"DrainOrchestrator" MetricName="' + name + '"' + f"', '{stat}', 300)"

    for name in names - {"DrainDurationSeconds", "DrainHeldSeconds"}:
        assert expected(name, "Sum") in expressions, name
    assert expected("DrainDurationSeconds", "p50") in expressions
    assert expected("DrainDurationSeconds", "Maximum") in expressions
    assert expected("DrainHeldSeconds", "Maximum") in expressions
    dead_letters = next(w for w in widgets if w["properties"]["title"] == "Dead letters")["properties"]["metrics"]
    assert [m[:2] for m in dead_letters] == [["AWS/SQS", "ApproximateNumberOfMessagesVisible"]] * 2
    assert len(widgets[0]["properties"]["alarms"]) == 11


def alarms(synth: Synthesized) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in synth.resources("AWS::CloudWatch::Alarm").items()}


LOUD = ("StepsFailing", "Throttles", "AsyncEventAge", "EventBridgeFailedInvocations", "Liveness")


def test_alarms_go_to_the_alarm_topic(single: Synthesized) -> None:
    found = alarms(single)
    topic = {"Ref": logical_id(single, "AWS::SNS::Topic", "AlarmTopic")}
    # errors, two dead-letter queues, deadline missed, lifecycle access denied, drain held (one cluster), failure alarms
    assert len(found) == 6 + len(LOUD)
    for logical, alarm in found.items():
        assert alarm["AlarmActions"] == [topic]
        if any(name in logical for name in LOUD):
            continue  # their own thresholds: test_failures_that_would_stay_silent_each_have_an_alarm
        assert alarm["Threshold"] == 1
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["TreatMissingData"] == "notBreaching"
    errors = next(a for a in found.values() if a.get("MetricName") == "Errors")
    assert errors["Namespace"] == "AWS/Lambda"
    function = {"Ref": logical_id(single, "AWS::Lambda::Function", "DrainOrchestratorFunction")}
    assert {"Name": "Resource", "Value": {"Fn::Join": ["", [function, ":live"]]}} in errors["Dimensions"]
    queues = sorted(
        a["Dimensions"][0]["Value"]["Fn::GetAtt"][0]
        for a in found.values()
        if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"
    )
    assert queues == sorted(single.resources("AWS::SQS::Queue"))
    (deadline,) = [a for a in found.values() if "Metrics" in a and over(a) == "DrainDeadlineMissed"]
    assert_deadline_alarm(deadline, "prod")
    (held,) = [a for a in found.values() if "Metrics" in a and over(a) == "DrainHeldSeconds"]
    assert_deadline_alarm(held, "prod", metric="DrainHeldSeconds", statistic="Maximum")
    (denied,) = [a for a in found.values() if "Metrics" in a and over(a) == "LifecycleAccessDenied"]
    assert_deadline_alarm(denied, "prod", metric="LifecycleAccessDenied")


def test_failures_that_would_stay_silent_each_have_an_alarm(single: Synthesized) -> None:
    found = {name: next(a for k, a in alarms(single).items() if name in k) for name in LOUD}
    function = {"Ref": logical_id(single, "AWS::Lambda::Function", "DrainOrchestratorFunction")}
    own = [{"Name": "service", "Value": "drain-orchestrator"}]

    steps = found["StepsFailing"]  # 15 minutes of failing steps, whatever the step
    assert (steps["Namespace"], steps["MetricName"], steps["Dimensions"]) == ("DrainOrchestrator", "StepFailures", own)
    assert (steps["Period"], steps["EvaluationPeriods"], steps["DatapointsToAlarm"]) == (300, 3, 3)
    assert "rbac apply" in steps["AlarmDescription"]  # the most likely cause, named
    throttles, age = found["Throttles"], found["AsyncEventAge"]
    assert (throttles["Namespace"], throttles["MetricName"]) == ("AWS/Lambda", "Throttles")
    assert (age["MetricName"], age["Statistic"], age["Threshold"]) == ("AsyncEventAge", "Maximum", 120_000)
    for alarm in (throttles, age):
        assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": function}]  # every version's
    failed = found["EventBridgeFailedInvocations"]
    series = [m["MetricStat"]["Metric"] for m in failed["Metrics"] if "MetricStat" in m]
    assert {m["MetricName"] for m in series} == {"FailedInvocations"}
    rules = {d["Value"]["Ref"] for m in series for d in m["Dimensions"]}
    assert rules == set(single.resources("AWS::Events::Rule"))  # every rule, the schedules too
    live = found["Liveness"]  # silence is the failure
    assert (live["MetricName"], live["Dimensions"], live["Period"]) == ("LivenessChecks", own, 3600)
    assert (live["ComparisonOperator"], live["Threshold"], live["TreatMissingData"]) == (
        "LessThanThreshold",
        1,
        "breaching",
    )


def over(alarm: dict[str, Any]) -> str:
    """The metric an alarm's math expression is over."""
    name: str = next(m for m in alarm["Metrics"] if "MetricStat" in m)["MetricStat"]["Metric"]["MetricName"]
    return name


KINDS = list(get_args(Kind))  # every kind the function names, so a new one cannot miss the alarm


def assert_deadline_alarm(
    alarm: dict[str, Any], cluster: str, *, metric: str = "DrainDeadlineMissed", statistic: str = "Sum"
) -> None:
    """Sums ``metric`` (DrainDeadlineMissed by default) over every kind, with the dimensions the workflow emits."""
    series = [m for m in alarm["Metrics"] if "MetricStat" in m]
    (expression,) = [m for m in alarm["Metrics"] if "Expression" in m]
    assert expression["ReturnData"] is not False
    assert sorted(f"FILL({m['Id']}, 0)" for m in series) == sorted(expression["Expression"].split(" + "))
    kinds = []
    for item in series:
        stat = item["MetricStat"]
        assert stat["Metric"]["Namespace"] == "DrainOrchestrator"
        assert stat["Metric"]["MetricName"] == metric
        dims = {d["Name"]: d["Value"] for d in stat["Metric"]["Dimensions"]}
        assert (dims["cluster"], dims["service"]) == (cluster, "drain-orchestrator")
        kinds.append(dims["kind"])
        assert stat["Stat"] == statistic and stat["Period"] == 300
        assert item["ReturnData"] is False
    assert sorted(kinds) == sorted(KINDS)


def test_deadline_alarm_per_cluster(multi: Synthesized) -> None:
    deadline_alarms = [a for a in alarms(multi).values() if "Metrics" in a and over(a) == "DrainDeadlineMissed"]
    clusters = []
    for alarm in deadline_alarms:
        first = next(m for m in alarm["Metrics"] if "MetricStat" in m)
        dimensions = first["MetricStat"]["Metric"]["Dimensions"]
        cluster = next(d["Value"] for d in dimensions if d["Name"] == "cluster")
        assert_deadline_alarm(alarm, cluster)
        clusters.append(cluster)
    assert sorted(clusters) == ["batch", "prod", "staging"]


@pytest.mark.parametrize("config", ["single", "multi"])
def test_outputs(config: str, request: pytest.FixtureRequest) -> None:
    synth: Synthesized = request.getfixturevalue(config)
    in_vpc = {"FunctionSecurityGroupIds"} if config == "multi" else set()
    assert set(synth.raw["Outputs"]) == in_vpc | {
        "FunctionAliasArn",
        "FunctionRoleArn",
        "NotificationTopicArn",
        "AlarmTopicArn",
        "DashboardName",
        "LogGroupName",
        "DeliveryDeadLetterQueueUrl",
        "FailedInvocationQueueUrl",
    }


TG_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/by-hand/0123456789abcdef"


def test_load_balancer_gate_permissions(single: Synthesized, synth: Any) -> None:
    sids = by_sid(single)
    assert sids["DescribeTargetHealth"]["Resource"] == "*"  # ELBv2 Describe* support no resource-level scoping
    assert "DeregisterConfiguredTargets" not in sids
    by_hand = by_sid(synth({"clusters": "prod", "drainSettings": json.dumps({"TARGET_GROUP_ARNS": TG_ARN})}))
    assert by_hand["DeregisterConfiguredTargets"]["Action"] == "elasticloadbalancing:DeregisterTargets"
    assert by_hand["DeregisterConfiguredTargets"]["Resource"] == TG_ARN
    off = statements(synth({"clusters": "prod", "drainSettings": '{"WAIT_FOR_DEREGISTRATION": "never"}'}))
    assert not [s for s in off if "elasticloadbalancing" in json.dumps(s["Action"])]

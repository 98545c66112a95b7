"""The construct used as a library: CDK-typed props (the app's VPC, security groups, topics, KMS key), the
attributes and `connections` an app wires into its own stacks, the metric helpers, the package's exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from infra.construct import HANDLER

from tests.infra.conftest import REPO_ROOT, Synthesized

VPC_ID = "vpc-0123456789abcdef0"


def _resources(template: dict[str, Any], type_name: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == type_name]


@pytest.fixture(scope="module")
def library_app(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One app, one synth: a platform stack that owns the VPC, cluster security group, topics and key."""
    import aws_cdk as cdk
    from aws_cdk import aws_cloudwatch as cw
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_sns as sns

    from infra import DrainOrchestrator, OrchestratorConfig

    outdir = tmp_path_factory.mktemp("library-app")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Platform", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    vpc = ec2.Vpc.from_vpc_attributes(
        stack, "Vpc", vpc_id=VPC_ID, availability_zones=["eu-west-1a", "eu-west-1b"],
        private_subnet_ids=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
        private_subnet_route_table_ids=["rtb-0aaaaaaaaaaaaaaa1", "rtb-0bbbbbbbbbbbbbbb2"],
    )  # fmt: skip
    cluster_sg = ec2.SecurityGroup(stack, "ClusterSecurityGroup", vpc=vpc)
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    notifications = sns.Topic(stack, "PlatformNotifications")
    orchestrator = DrainOrchestrator(
        stack,
        "Drainer",
        config=OrchestratorConfig(clusters=("prod",)),
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
        vpc=vpc,
        notification_topic=notifications,
        encryption_key=key,
    )
    cluster_sg.connections.allow_from(orchestrator, ec2.Port.tcp(443), "drain orchestrator to the EKS API")
    cw.Alarm(
        stack, "TeamAlarm", metric=orchestrator.metric_nodes_drained(cluster="prod", kind="asg-terminate"),
        threshold=1, evaluation_periods=1,
    )  # fmt: skip
    dashboard = cw.Dashboard(stack, "TeamDashboard")
    dashboard.add_widgets(
        cw.GraphWidget(left=[orchestrator.metric_pods_evicted(), orchestrator.metric_drain_duration()])
    )

    outside = cdk.Stack(app, "NoVpc")
    plain = DrainOrchestrator(
        outside, "Drainer", config=OrchestratorConfig(clusters=("prod",)),
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
    )  # fmt: skip
    with pytest.raises(ValueError, match="outside a VPC"):
        _ = plain.connections

    assembly = app.synth()
    templates = {
        name: json.loads(Path(assembly.get_stack_by_name(name).template_full_path).read_text())
        for name in ("Platform", "NoVpc")
    }
    return {"templates": templates, "orchestrator": orchestrator, "plain": plain, "cluster_sg": cluster_sg}


def test_function_runs_in_the_apps_vpc_with_a_created_group_reachable_through_connections(
    library_app: dict[str, Any],
) -> None:
    template = library_app["templates"]["Platform"]
    (function,) = [r["Properties"] for r in _resources(template, "AWS::Lambda::Function")
                   if r["Properties"]["Handler"] == HANDLER]  # fmt: skip
    assert sorted(function["VpcConfig"]["SubnetIds"]) == ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]
    (group_ref,) = function["VpcConfig"]["SecurityGroupIds"]
    created = group_ref["Fn::GetAtt"][0]
    assert template["Resources"][created]["Properties"]["VpcId"] == VPC_ID
    # `connections` let the app open the cluster security group to the function's group
    (ingress,) = [r["Properties"] for r in _resources(template, "AWS::EC2::SecurityGroupIngress")]
    assert ingress["SourceSecurityGroupId"] == {"Fn::GetAtt": [created, "GroupId"]}
    assert (ingress["FromPort"], ingress["ToPort"]) == (443, 443)
    orchestrator = library_app["orchestrator"]
    assert orchestrator.security_group is not None and len(orchestrator.security_groups) == 1


def test_the_apps_topic_is_used_and_no_notification_topic_is_created(library_app: dict[str, Any]) -> None:
    template = library_app["templates"]["Platform"]
    topics = {k for k, r in template["Resources"].items() if r["Type"] == "AWS::SNS::Topic"}
    # the platform's own topic and the construct's alarm topic; no notification topic of the construct
    assert len(topics) == 2 and any(k.startswith("PlatformNotifications") for k in topics)
    (function,) = [r["Properties"] for r in _resources(template, "AWS::Lambda::Function")
                   if r["Properties"]["Handler"] == HANDLER]  # fmt: skip
    (topic_key,) = [k for k in topics if k.startswith("PlatformNotifications")]
    assert function["Environment"]["Variables"]["NOTIFICATION_TOPIC_ARN"] == {"Ref": topic_key}


def _customer_key_arn(template: dict[str, Any]) -> dict[str, list[str]]:
    (key_id,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::KMS::Key" and k.startswith("Key")]
    return {"Fn::GetAtt": [key_id, "Arn"]}


def test_the_key_encrypts_queues_logs_and_durable_state_and_the_writers_may_use_it_on_conditions(
    library_app: dict[str, Any],
) -> None:
    template = library_app["templates"]["Platform"]
    key_arn = _customer_key_arn(template)
    key_id = key_arn["Fn::GetAtt"][0]
    queues = [r["Properties"] for r in _resources(template, "AWS::SQS::Queue")]
    assert len(queues) == 2
    for queue in queues:
        assert queue["KmsMasterKeyId"] == key_arn and "SqsManagedSseEnabled" not in queue
    (log_group,) = [r["Properties"] for r in _resources(template, "AWS::Logs::LogGroup")]
    assert log_group["KmsKeyId"] == key_arn
    (function,) = [
        r["Properties"] for r in _resources(template, "AWS::Lambda::Function") if r["Properties"]["Handler"] == HANDLER
    ]
    assert function["DurableConfig"]["KMSKeyArn"] == key_arn  # the executions' payloads and checkpoints
    statements = template["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    services = {json.dumps(st["Principal"]["Service"]): st for st in statements if "Service" in st.get("Principal", {})}
    # only the services that write into what the key encrypts, each on AWS's conditions for it; no alarms
    assert len(services) == 2 and not [k for k in services if "cloudwatch" in k]
    logs = next(st for k, st in services.items() if "logs." in k)
    assert list(logs["Condition"]) == ["ArnLike"]
    assert "kms:EncryptionContext:aws:logs:arn" in logs["Condition"]["ArnLike"]
    events = services['"events.amazonaws.com"']
    assert list(events["Condition"]["StringEquals"]) == ["kms:ViaService"]
    assert sorted(events["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]


def test_the_key_encrypts_the_shared_reads_table_which_the_function_uses_through_dynamodb_only(
    library_app: dict[str, Any],
) -> None:
    template = library_app["templates"]["Platform"]
    key_arn = _customer_key_arn(template)
    (table,) = [r["Properties"] for r in _resources(template, "AWS::DynamoDB::Table")]
    assert table["SSESpecification"] == {"KMSMasterKeyId": key_arn, "SSEEnabled": True, "SSEType": "KMS"}
    role_statements = [
        st
        for r in _resources(template, "AWS::IAM::Policy")
        if r["Properties"]["PolicyName"].startswith("DrainerFunctionServiceRoleDefaultPolicy")
        for st in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    (on_key,) = [st for st in role_statements if st.get("Sid") == "SharedReadsTableKey"]
    assert on_key["Resource"] == key_arn
    assert on_key["Action"] == ["kms:Encrypt", "kms:ReEncrypt*", "kms:DescribeKey"]
    via = on_key["Condition"]["StringEquals"]["kms:ViaService"]["Fn::Join"][1]
    assert via == ["dynamodb.", {"Ref": "AWS::Region"}, ".amazonaws.com"]
    # without a customer key the table is DynamoDB's default (an AWS-owned key), like the queues' SQS-managed one
    (plain,) = [r["Properties"] for r in _resources(library_app["templates"]["NoVpc"], "AWS::DynamoDB::Table")]
    assert plain["SSESpecification"] == {"SSEEnabled": False}


def test_the_alarm_topic_has_a_key_of_its_own_that_only_cloudwatch_alarms_of_the_account_use(
    library_app: dict[str, Any],
) -> None:
    template = library_app["templates"]["Platform"]
    (alarm_topic,) = [
        r["Properties"] for r in _resources(template, "AWS::SNS::Topic") if "KmsMasterKeyId" in r.get("Properties", {})
    ]  # the construct's alarm topic (the app's own topic is the app's business)
    (own,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::KMS::Key" and "AlarmTopicKey" in k]
    assert alarm_topic["KmsMasterKeyId"] == {"Fn::GetAtt": [own, "Arn"]}
    key = template["Resources"][own]["Properties"]
    assert key["EnableKeyRotation"] is True
    (cloudwatch,) = [st for st in key["KeyPolicy"]["Statement"] if "Service" in st.get("Principal", {})]
    assert cloudwatch["Principal"]["Service"] == "cloudwatch.amazonaws.com"
    assert cloudwatch["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert cloudwatch["Condition"]["ArnLike"]["aws:SourceArn"]["Fn::Join"][1][-1] == ":alarm:*"
    # without a customer key there is nothing to keep apart: no key is created
    plain = library_app["templates"]["NoVpc"]
    assert not _resources(plain, "AWS::KMS::Key")


def test_metric_helpers_give_alarmable_series_and_dashboard_searches(library_app: dict[str, Any]) -> None:
    template = library_app["templates"]["Platform"]
    (alarm,) = [r["Properties"] for k, r in template["Resources"].items() if k.startswith("TeamAlarm")]
    assert alarm["Namespace"] == "DrainOrchestrator" and alarm["MetricName"] == "NodesDrained"
    assert sorted(d["Name"] for d in alarm["Dimensions"]) == ["cluster", "kind", "service"]
    (dashboard,) = _resources(template, "AWS::CloudWatch::Dashboard")[-1:]
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert 'MetricName=\\\\\\"PodsEvicted\\\\\\"' in body or "PodsEvicted" in body
    orchestrator = library_app["orchestrator"]
    with pytest.raises(ValueError, match="both cluster and kind"):
        orchestrator.metric_nodes_drained(cluster="prod")
    # function errors, two dead-letter queues, one cluster's deadlines, lifecycle access denied and holds, and the
    # failure alarms
    assert len(orchestrator.alarms) == 11


def test_outside_a_vpc_there_is_no_security_group(library_app: dict[str, Any]) -> None:
    template = library_app["templates"]["NoVpc"]
    assert _resources(template, "AWS::EC2::SecurityGroup") == []
    assert library_app["plain"].security_groups == [] and library_app["plain"].security_group is None


def test_vpc_props_conflicts_name_the_prop() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_lambda as lambda_

    from infra import ConfigError, DrainOrchestrator, OrchestratorConfig, VpcPlacement

    stack = cdk.Stack(cdk.App(), "S")
    code = lambda_.Code.from_inline("x")
    placement = VpcPlacement(VPC_ID, ("subnet-0aaaaaaaaaaaaaaa1",))
    vpc = ec2.Vpc.from_vpc_attributes(stack, "Vpc", vpc_id=VPC_ID, availability_zones=["eu-west-1a"])
    with pytest.raises(ConfigError, match="'vpc': give either") as raised:
        DrainOrchestrator(stack, "A", config=OrchestratorConfig(clusters=("p",), vpc=placement), vpc=vpc, code=code)
    assert raised.value.key == "vpc"
    group = ec2.SecurityGroup.from_security_group_id(stack, "G", "sg-0ccccccccccccccc3")
    with pytest.raises(ConfigError) as raised:
        DrainOrchestrator(stack, "B", config=OrchestratorConfig(clusters=("p",)), security_groups=[group], code=code)
    assert raised.value.key == "security_groups"


def test_vpc_stack_outputs_the_function_security_group(multi: Synthesized) -> None:
    assert multi.raw["Outputs"]["FunctionSecurityGroupIds"]["Value"] == "sg-0ccccccccccccccc3"


def test_package_exports_resolve_and_the_wheel_is_typed() -> None:
    import infra

    for name in infra.__all__:
        assert getattr(infra, name) is not None, name
    assert infra.RBAC_MANIFEST.is_file()
    assert (REPO_ROOT / "infra" / "py.typed").is_file()


def test_all_lists_every_export() -> None:
    import infra

    assert sorted(infra.__all__) == sorted(infra._EXPORTS)


def test_drain_settings_that_could_exceed_the_durable_limits_are_refused_as_props() -> None:
    from infra import ConfigError, OrchestratorConfig

    fast = {"DRAIN_PASS_SECONDS": "5", "RECHECK_MIN_SECONDS": "1", "RECHECK_MAX_SECONDS": "5"}
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(clusters=("p",), drain_settings=fast)
    assert raised.value.key == "drain_settings"
    for text in ("DRAIN_PASS_SECONDS", "HELD_RECHECK_MAX_SECONDS", "3000 operations", "durable operations"):
        assert text in str(raised.value)
    # the same pacing with a lifecycle cap of an hour stays within the limits
    OrchestratorConfig(
        clusters=("p",),
        drain_settings={**fast, "DEADLINE_ASG_TERMINATE_SECONDS": "3600", "DEADLINE_REBALANCE_SECONDS": "600"},
    )

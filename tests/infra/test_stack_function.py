"""Template assertions for the drain function: runtime, logging, environment and options from context, VPC
placement (given security groups, or one created), and the live alias as its only invoke target with the async
invoke config."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from drain_orchestrator import workflow_settings
from tests.infra.conftest import Synthesized
from tests.infra.stack_support import alias_ref, logical_id, managed_policies, queue_arn

VPC_POLICY = "service-role/AWSLambdaVPCAccessExecutionRole"


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
        "SHARED_READS_TABLE": {"Ref": logical_id(single, "AWS::DynamoDB::Table", "SharedReadsTable")},
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

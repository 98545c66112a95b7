"""CDK context validation: pure, no jsii. Defaults, every option parsed from the CLI's strings or cdk.json's
values, and every bad value or unknown key named in the error."""

from __future__ import annotations

from typing import Any

import pytest
from infra.config import (
    DEFAULT_EXECUTION_TIMEOUT_HOURS,
    ConfigError,
    KindActions,
    check_no_unknown_keys,
    config_from_mapping,
    unknown_keys,
)
from infra.environment import lambda_environment

from tests.infra.conftest import MULTI_VPC


def test_defaults_for_one_cluster() -> None:
    config = config_from_mapping({"clusters": "prod"})
    assert config.clusters == ("prod",)
    assert config.actions == KindActions("cordon", "drain", "drain", "drain")
    assert config.vpc is None
    assert config.create_access_entries is True
    assert config.execution_timeout_hours == DEFAULT_EXECUTION_TIMEOUT_HOURS >= 48
    assert (config.memory_size, config.timeout_seconds, config.log_retention_days) == (512, 600, 30)
    # the function answers only the hook the construct creates (by default nothing else is ours)
    assert config.served_asg_names == () and config.served_hook_names == ("drain-orchestrator",)
    assert config.actions.foreign_hook == "ignore" and config.drain_controller_managed_nodes == ()
    assert config.surge_sweep_minutes == 15


def test_every_option_parsed_from_cli_strings() -> None:
    config = config_from_mapping(MULTI_VPC)
    assert config.clusters == ("prod", "staging", "batch")
    assert config.asg_names == ("prod-workers", "staging-workers")
    # lifecycle rules and IAM cover the ASGs we put hooks on, and the hook we create
    assert config.served_asg_names == ("prod-workers", "staging-workers", "batch-spot")
    assert config.served_hook_names == ("node-drainer", "drain-orchestrator")
    assert config.ownership_tag == "example.com/eks-cluster"
    assert config.actions == KindActions(
        "ignore", "drain", "cordon", "cordon", capacity_reservation_interruption="cordon"
    )
    assert config.vpc is not None
    assert config.vpc.subnet_ids == ("subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2")
    assert config.vpc.security_group_ids == ("sg-0ccccccccccccccc3",)
    assert config.alarm_email == "oncall@example.com"
    assert (config.reserved_concurrency, config.memory_size, config.timeout_seconds) == (20, 1024, 900)
    assert (config.execution_timeout_hours, config.log_retention_days, config.log_level) == (48, 90, "DEBUG")
    assert config.heartbeat_timeout_seconds == 900
    assert config.drain_settings == (("DRAIN_GRACE_PERIOD", "30"), ("MAX_CONCURRENT_NODES", "8"))
    assert config.surge_sweep_minutes == 0


def test_cdk_json_style_values() -> None:
    config = config_from_mapping(
        {
            "clusters": ["a", "b", "a"],
            "createAccessEntries": False,
            "memorySize": 256,
            "reservedConcurrency": 5,
        }
    )
    assert config.clusters == ("a", "b")  # duplicates dropped, order kept
    assert config.create_access_entries is False
    assert (config.memory_size, config.reserved_concurrency) == (256, 5)


@pytest.mark.parametrize(
    ("context", "key"),
    [
        ({}, "clusters"),
        ({"clusters": ""}, "clusters"),
        ({"clusters": "*"}, "clusters"),
        ({"clusters": "prod,,dev"}, "clusters"),
        ({"clusters": "bad name"}, "clusters"),
        ({"clusters": 3}, "clusters"),
        ({"asgNames": "arn:aws:autoscaling:x"}, "asgNames"),
        ({"lifecycleHookNames": "bad hook!"}, "lifecycleHookNames"),
        ({"createLifecycleHooks": "a:b"}, "createLifecycleHooks"),
        ({"createdHookName": "no spaces"}, "createdHookName"),
        ({"ownershipTag": "=x"}, "ownershipTag"),
        ({"ownershipTag": "key="}, "ownershipTag"),
        ({"ownershipTag": "a=b=c"}, "ownershipTag"),
        ({"clusters": "a,b", "ownershipTag": "team=platform"}, "ownershipTag"),
        ({"actionRebalance": "evict"}, "actionRebalance"),
        ({"actionSpotInterruption": "wait"}, "actionSpotInterruption"),
        ({"actionCapacityReservationInterruption": "wait"}, "actionCapacityReservationInterruption"),
        ({"actionStateChange": "DRAIN"}, "actionStateChange"),
        ({"actionScheduledChange": ""}, "actionScheduledChange"),
        ({"vpcId": "vpc-123"}, "vpcId"),
        ({"vpcId": "vpc-0123456789abcdef0"}, "subnetIds"),
        ({"subnetIds": "subnet-0aaaaaaaaaaaaaaa1"}, "vpcId"),
        ({"securityGroupIds": "sg-0ccccccccccccccc3"}, "vpcId"),
        ({"vpcId": "vpc-0123456789abcdef0", "subnetIds": "sn-1"}, "subnetIds"),
        ({"vpcId": "vpc-0123456789abcdef0", "subnetIds": "subnet-0aaaaaaaaaaaaaaa1", "securityGroupIds": "x"},
         "securityGroupIds"),
        ({"alarmEmail": "not-an-email"}, "alarmEmail"),
        ({"heartbeatTimeoutSeconds": "29"}, "heartbeatTimeoutSeconds"),
        ({"createAccessEntries": "yes"}, "createAccessEntries"),
        ({"reservedConcurrency": "0"}, "reservedConcurrency"),
        ({"reservedConcurrency": "ten"}, "reservedConcurrency"),
        ({"memorySize": "64"}, "memorySize"),
        ({"memorySize": True}, "memorySize"),
        ({"timeoutSeconds": "901"}, "timeoutSeconds"),
        ({"executionTimeoutHours": "47"}, "executionTimeoutHours"),
        ({"logRetentionDays": "31"}, "logRetentionDays"),
        ({"logLevel": "TRACE"}, "logLevel"),
        ({"surgeSweepMinutes": "1441"}, "surgeSweepMinutes"),
        ({"surgeSweepMinutes": "-1"}, "surgeSweepMinutes"),
        ({"drainSettings": "{not json"}, "drainSettings"),
        ({"drainSettings": '["DRY_RUN"]'}, "drainSettings"),
        ({"drainSettings": '{"CLUSTER_NAMES": "other"}'}, "drainSettings"),
        ({"drainSettings": '{"TRACING": "true"}'}, "drainSettings"),
        ({"drainSettings": '{"DRAIN_FORCE": [1]}'}, "drainSettings"),
        ({"drainSettings": '{"WAIT_FOR_DEREGISTRATION": "nevr"}'}, "drainSettings"),
        ({"drainSettings": '{"RECHECK_MIN_SECONDS": 60, "RECHECK_MAX_SECONDS": 30}'}, "drainSettings"),
        ({"drainSettings": '{"DRAIN_PASS_SECONDS": 5, "RECHECK_MIN_SECONDS": 1, "RECHECK_MAX_SECONDS": 5}'},
         "drainSettings"),
        ({"timeoutSeconds": "120"}, "timeoutSeconds"),
        ({"timeoutSeconds": "300", "drainSettings": '{"DRAIN_PASS_SECONDS": 600}'}, "timeoutSeconds"),
    ],
)  # fmt: skip
def test_bad_context_names_the_key(context: dict[str, Any], key: str) -> None:
    full = {"clusters": "prod", **context} if "clusters" not in context and context else dict(context)
    with pytest.raises(ConfigError) as raised:
        config_from_mapping(full)
    assert raised.value.key == key
    assert f"'{key}'" in str(raised.value)


def test_unknown_keys_are_reported_but_cdk_keys_are_not() -> None:
    context = {
        "clusters": "a",
        "alarmEmali": "typo",
        "aws:cdk:bundling-stacks": [],
        "@aws-cdk/x:flag": True,
        "acknowledged-issue-numbers": [1],
    }
    assert unknown_keys(context) == ["alarmEmali"]
    with pytest.raises(ConfigError, match="did you mean 'alarmEmail'") as raised:
        check_no_unknown_keys(context)
    assert raised.value.key == "alarmEmali"


def test_hook_names_are_the_configured_ones_and_the_created_hooks_name() -> None:
    # a hook made by hand under the default name is ours too, with or without createLifecycleHooks
    assert config_from_mapping({"clusters": "a", "lifecycleHookNames": "nd"}).served_hook_names == (
        "nd",
        "drain-orchestrator",
    )
    renamed = config_from_mapping({"clusters": "a", "createdHookName": "team-drain"})
    assert renamed.served_hook_names == ("team-drain",)
    env = lambda_environment(renamed, notification_topic_arn="t")
    assert env["LIFECYCLE_HOOK_NAMES"] == "team-drain"
    assert "ACTION_FOREIGN_HOOK" not in env and "DRAIN_CONTROLLER_MANAGED_NODES" not in env


def test_controller_opt_ins_and_foreign_hook_action_from_context() -> None:
    config = config_from_mapping(
        {
            "clusters": "a",
            "drainControllerManagedNodes": ["karpenter", "managed-node-group"],
            "actionForeignHook": "cordon",
        }
    )
    assert config.drain_controller_managed_nodes == ("karpenter", "managed-node-group")
    env = lambda_environment(config, notification_topic_arn="t")
    assert (env["DRAIN_CONTROLLER_MANAGED_NODES"], env["ACTION_FOREIGN_HOOK"]) == (
        "karpenter,managed-node-group",
        "cordon",
    )
    assert (
        config_from_mapping({"clusters": "a", "drainControllerManagedNodes": "none"}).drain_controller_managed_nodes
        == ()
    )


@pytest.mark.parametrize(
    ("context", "key", "fragment"),
    [
        ({"drainControllerManagedNodes": "karpenter,cluster-autoscaler"}, "drainControllerManagedNodes", "auto-mode"),
        ({"drainControllerManagedNodes": "karpenter,"}, "drainControllerManagedNodes", "empty item"),
        ({"actionForeignHook": "complete"}, "actionForeignHook", "ignore, cordon, drain"),
    ],
)
def test_controller_and_foreign_hook_keys_are_validated(context: dict[str, Any], key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as raised:
        config_from_mapping({"clusters": "a", **context})
    assert raised.value.key == key and fragment in str(raised.value)


def test_lifecycle_rules_match_only_our_hooks_unless_foreign_hooks_are_drained() -> None:
    from infra.event_rules import rule_specs

    def detail(context: dict[str, Any], kind: str) -> Any:
        spec = next(s for s in rule_specs(config_from_mapping({"clusters": "a", **context})) if s.kind == kind)
        return spec.pattern.get("detail")

    for kind in ("asg-terminate", "asg-launch"):
        assert detail({}, kind) == {"LifecycleHookName": ["drain-orchestrator"]}
    # draining for another's terminate hook needs its events; launch hooks stay ours only
    widened = {"actionForeignHook": "drain", "asgNames": "prod-workers"}
    assert detail(widened, "asg-terminate") == {"AutoScalingGroupName": ["prod-workers"]}
    assert detail(widened, "asg-launch") == {
        "AutoScalingGroupName": ["prod-workers"],
        "LifecycleHookName": ["drain-orchestrator"],
    }
    assert detail({"actionForeignHook": "drain"}, "asg-terminate") is None


def test_bad_drain_setting_value_is_refused_by_the_function_settings_code() -> None:
    with pytest.raises(ConfigError) as raised:
        config_from_mapping({"clusters": "a", "drainSettings": '{"WAIT_FOR_DEREGISTRATION": "nevr"}'})
    # the function's own message, naming the variable and what it accepts
    assert str(raised.value).startswith("invalid CDK context 'drainSettings': WAIT_FOR_DEREGISTRATION: 'nevr'")
    assert "lifecycle" in str(raised.value) and "never" in str(raised.value)

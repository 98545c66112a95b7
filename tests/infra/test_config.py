"""CDK context validation: pure, no jsii. Every bad value must name its key."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from infra.config import (
    DEFAULT_EXECUTION_TIMEOUT_HOURS,
    WORKFLOW_VARIABLES,
    ClusterEndpoint,
    ConfigError,
    KindActions,
    OrchestratorConfig,
    VpcPlacement,
    check_no_unknown_keys,
    config_from_mapping,
    unknown_keys,
)
from infra.environment import lambda_environment

from drain_orchestrator import workflow_settings
from testbed.pki import other_ca_pem
from tests.infra.conftest import MULTI_VPC, REPO_ROOT


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


def test_lambda_environment_matches_the_settings_names() -> None:
    env = lambda_environment(config_from_mapping(MULTI_VPC), notification_topic_arn="arn:topic")
    # the bound of exactly these settings was checked at synth: the function's cold start need not run the model
    checked = env.pop(workflow_settings.BOUND_CHECKED_VARIABLE)
    assert checked == workflow_settings.bound_digest(workflow_settings.WorkflowSettings.from_env(env))
    assert env == {
        "CLUSTER_NAMES": "prod,staging,batch",
        "OWNERSHIP_TAG": "example.com/eks-cluster",
        "ACTION_REBALANCE": "ignore",
        "ACTION_SPOT_INTERRUPTION": "drain",
        "ACTION_CAPACITY_RESERVATION_INTERRUPTION": "cordon",
        "ACTION_STATE_CHANGE": "cordon",
        "ACTION_SCHEDULED_CHANGE": "cordon",
        "ACTION_CAPACITY_BLOCK": "drain",
        "LIFECYCLE_HOOK_NAMES": "node-drainer,drain-orchestrator",
        "NOTIFICATION_TOPIC_ARN": "arn:topic",
        "POWERTOOLS_SERVICE_NAME": "drain-orchestrator",
        "POWERTOOLS_METRICS_NAMESPACE": "DrainOrchestrator",
        "LOG_LEVEL": "DEBUG",
        "DRAIN_GRACE_PERIOD": "30",
        "MAX_CONCURRENT_NODES": "8",
        "CLUSTER_ENDPOINTS": MULTI_VPC["clusterEndpoints"].replace(" ", ""),
    }
    assert "OWNERSHIP_TAG" not in lambda_environment(config_from_mapping({"clusters": "a"}), notification_topic_arn="t")


def test_drain_settings_pass_through_as_strings() -> None:
    config = config_from_mapping(
        {"clusters": "a", "drainSettings": '{"DRY_RUN": true, "DRAIN_GRACE_PERIOD": 30, "DRAIN_TAINT": "x:NoSchedule"}'}
    )
    env = lambda_environment(config, notification_topic_arn="t")
    assert (env["DRY_RUN"], env["DRAIN_GRACE_PERIOD"], env["DRAIN_TAINT"]) == ("true", "30", "x:NoSchedule")
    from_json = config_from_mapping(
        {"clusters": "a", "drainSettings": {"DRAIN_PASS_SECONDS": 60}, "timeoutSeconds": 120}
    )
    assert from_json.drain_settings == (("DRAIN_PASS_SECONDS", "60"),)


class _Recording(dict[str, str]):
    """An environment that remembers which variables were looked up."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return super().__getitem__(key)


def test_workflow_variables_match_what_the_function_reads() -> None:
    from drain_orchestrator.workflow_settings import WorkflowSettings

    env = _Recording()
    WorkflowSettings.from_env(env)
    # the log level is Powertools' own variable (checked at cold start, set with the Powertools ones, not
    # drainSettings);
    # the bound's digest is the construct's own mark, never a drain setting
    own = {"TRACING", "POWERTOOLS_LOG_LEVEL", "LOG_LEVEL", workflow_settings.BOUND_CHECKED_VARIABLE}
    assert set(WORKFLOW_VARIABLES) == env.read - own


@pytest.mark.parametrize(
    "context",
    [
        {"clusters": "prod"},
        MULTI_VPC,
        {"clusters": "a", "ownershipTag": "team=x", "drainSettings": '{"DRAIN_GRACE_PERIOD": 30, "DRY_RUN": true}'},
        {"clusters": "a", "actionForeignHook": "drain", "drainControllerManagedNodes": "karpenter,auto-mode"},
    ],
)
def test_environment_is_accepted_by_the_function_settings(context: dict[str, Any]) -> None:
    """The contract with drain_orchestrator.settings: what we deploy is what the function accepts."""
    from drain_orchestrator.settings import Settings
    from drain_orchestrator.workflow_settings import WorkflowSettings

    config = config_from_mapping(context)
    topic = "arn:aws:sns:eu-west-1:123456789012:DrainOrchestrator-NotificationTopic"
    env = lambda_environment(config, notification_topic_arn=topic)
    WorkflowSettings.from_env(env)  # raises SettingsError naming the variable otherwise
    settings = Settings.from_env(env)
    assert settings.cluster_names == config.clusters
    assert settings.notification_topic_arn == topic
    assert (settings.action_rebalance, settings.action_state_change) == (
        config.actions.rebalance,
        config.actions.state_change,
    )
    assert settings.action_capacity_reservation_interruption == config.actions.capacity_reservation_interruption
    assert settings.lifecycle_hook_names == config.served_hook_names
    assert settings.action_foreign_hook == config.actions.foreign_hook
    assert settings.drain_controller_managed == set(config.drain_controller_managed_nodes)


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


@pytest.mark.parametrize(
    ("props", "prop"),
    [
        ({"clusters": ("*",)}, "clusters"),
        ({"clusters": "prod"}, "clusters"),  # a string would be the clusters p, r, o, d
        ({"clusters": ()}, "clusters"),
        ({"clusters": ("bad name",)}, "clusters"),
        ({"create_lifecycle_hooks": "ng1"}, "create_lifecycle_hooks"),
        ({"asg_names": ("arn:aws:autoscaling:x",)}, "asg_names"),
        ({"lifecycle_hook_names": ("bad hook!",)}, "lifecycle_hook_names"),
        ({"created_hook_name": "no spaces"}, "created_hook_name"),
        ({"memory_size": 64}, "memory_size"),
        ({"memory_size": "512"}, "memory_size"),
        ({"heartbeat_timeout_seconds": True}, "heartbeat_timeout_seconds"),
        ({"reserved_concurrency": 0}, "reserved_concurrency"),
        ({"timeout_seconds": 120}, "timeout_seconds"),
        ({"execution_timeout_hours": 47}, "execution_timeout_hours"),
        ({"log_retention_days": 31}, "log_retention_days"),
        ({"log_level": "TRACE"}, "log_level"),
        ({"surge_sweep_minutes": 1.5}, "surge_sweep_minutes"),
        ({"alarm_email": "not-an-email"}, "alarm_email"),
        ({"create_access_entries": "false"}, "create_access_entries"),
        ({"clusters": ("a", "b"), "ownership_tag": "team=platform"}, "ownership_tag"),
        ({"ownership_tag": "a=b=c"}, "ownership_tag"),
        ({"drain_settings": {"DRAIN_GRACE": "30"}}, "drain_settings"),
        ({"drain_settings": {"WAIT_FOR_DEREGISTRATION": "nevr"}}, "drain_settings"),
        ({"drain_settings": {"DRAIN_GRACE_PERIOD": -1}}, "drain_settings"),
        ({"drain_settings": {"DRAIN_FORCE": [1]}}, "drain_settings"),
        ({"actions": "drain"}, "actions"),
        ({"vpc": "vpc-0123456789abcdef0"}, "vpc"),
    ],
)  # fmt: skip
def test_bad_props_name_the_prop(props: dict[str, Any], prop: str) -> None:
    """The documented library path, `OrchestratorConfig(...)` in a CDK app, runs the same validator as context."""
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(**{"clusters": ("prod",), **props})
    assert raised.value.key == prop
    assert str(raised.value).startswith(f"invalid OrchestratorConfig prop '{prop}': ")


@pytest.mark.parametrize(
    ("build", "prop"),
    [
        (lambda: KindActions(rebalance="evict"), "actions.rebalance"),
        (lambda: KindActions(spot_interruption="wait"), "actions.spot_interruption"),
        (lambda: VpcPlacement("vpc-123", ("subnet-0aaaaaaaaaaaaaaa1",)), "vpc.vpc_id"),
        (lambda: VpcPlacement("vpc-0123456789abcdef0", ()), "vpc.subnet_ids"),
        (lambda: VpcPlacement("vpc-0123456789abcdef0", "subnet-0aaaaaaaaaaaaaaa1"), "vpc.subnet_ids"),
        (lambda: VpcPlacement("vpc-0123456789abcdef0", ("subnet-0aaaaaaaaaaaaaaa1",), ("x",)),
         "vpc.security_group_ids"),
    ],
)  # fmt: skip
def test_bad_nested_props_name_the_prop(build: Any, prop: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build()
    assert raised.value.key == prop
    assert f"'{prop}'" in str(raised.value)


def test_props_are_normalized_like_context() -> None:
    config = OrchestratorConfig(
        clusters=["prod", "prod"],  # type: ignore[arg-type]
        create_lifecycle_hooks=["ng-1"],  # type: ignore[arg-type]
        drain_settings={"DRY_RUN": True, "DRAIN_GRACE_PERIOD": 30},  # type: ignore[arg-type]
    )
    assert config.clusters == ("prod",)
    assert config.create_lifecycle_hooks == ("ng-1",)
    assert config.drain_settings == (("DRAIN_GRACE_PERIOD", "30"), ("DRY_RUN", "true"))
    assert config == config_from_mapping(
        {
            "clusters": "prod",
            "createLifecycleHooks": "ng-1",
            "drainSettings": '{"DRY_RUN": true, "DRAIN_GRACE_PERIOD": 30}',
        }
    )


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter with only the repository root on sys.path (not lambda_src/), like a CDK app."""
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env={**clean, **env}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def test_synth_time_validation_loads_only_the_pure_settings_modules() -> None:
    code = """
import sys
sys.path = [p for p in sys.path if not p.endswith("lambda_src")]
from infra.config import OrchestratorConfig
OrchestratorConfig(clusters=("a",), drain_settings={"WAIT_FOR_DEREGISTRATION": "never"})
heavy = ("boto3", "botocore", "kubernetes", "pydantic", "aws_lambda_powertools", "aws_durable_execution_sdk_python")
heavy = sorted(m for m in sys.modules if m.partition(".")[0] in heavy)
print(heavy, [m for m in sys.modules if m.startswith("drain_orchestrator")])
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr
    # nothing heavy imported, and the function's package does not stay in sys.modules (a user's app may have its own)
    assert done.stdout.strip() == "[] []"


def test_a_settings_module_that_stops_being_pure_fails_the_synth(tmp_path: Path) -> None:
    app_root = tmp_path / "app"
    shutil.copytree(REPO_ROOT / "lambda_src", app_root / "lambda_src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copy(REPO_ROOT / name, app_root / name)
    settings = app_root / "lambda_src" / "drain_orchestrator" / "workflow_settings.py"
    settings.write_text(
        settings.read_text().replace("import re\n", "import re\nimport drain_orchestrator.workflow\n", 1)
    )
    code = "from infra.config import OrchestratorConfig; OrchestratorConfig(clusters=('a',))"
    done = _python(code, DRAIN_ORCHESTRATOR_APP_ROOT=str(app_root))
    assert done.returncode != 0
    assert "drain_orchestrator.workflow_settings imports drain_orchestrator.workflow" in done.stderr
    assert "must stay pure" in done.stderr


def test_timing_props_take_a_cdk_duration() -> None:
    from aws_cdk import Duration

    config = OrchestratorConfig(
        clusters=("prod",),
        heartbeat_timeout_seconds=Duration.minutes(10),  # type: ignore[arg-type]
        timeout_seconds=Duration.minutes(5),  # type: ignore[arg-type]
        execution_timeout_hours=Duration.days(7),  # type: ignore[arg-type]
        surge_sweep_minutes=Duration.hours(1),  # type: ignore[arg-type]
    )
    assert (config.heartbeat_timeout_seconds, config.timeout_seconds, config.execution_timeout_hours) == (600, 300, 168)
    assert config.surge_sweep_minutes == 60
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(clusters=("prod",), execution_timeout_hours=Duration.minutes(90))  # type: ignore[arg-type]
    assert raised.value.key == "execution_timeout_hours" and "whole number of hours" in str(raised.value)
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(clusters=("prod",), timeout_seconds=Duration.seconds(20))  # type: ignore[arg-type]
    assert raised.value.key == "timeout_seconds" and "out of range" in str(raised.value)


CA = base64.b64encode(other_ca_pem()).decode()
ENDPOINT = "https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com"


def test_cluster_endpoints_from_context_become_the_functions_setting() -> None:
    given = {"prod": {"endpoint": ENDPOINT, "certificateAuthorityData": CA}}
    for raw in (json.dumps(given), given):  # `-c clusterEndpoints='...'` or a JSON object in cdk.json
        config = config_from_mapping({"clusters": "prod,staging", "clusterEndpoints": raw})
        assert config.cluster_endpoints == (("prod", ClusterEndpoint(ENDPOINT, CA)),)
        env = lambda_environment(config, notification_topic_arn="arn:aws:sns:eu-west-1:123456789012:t")
        assert json.loads(env["CLUSTER_ENDPOINTS"]) == given
        from drain_orchestrator.settings import ClusterEndpoint as Given
        from drain_orchestrator.settings import Settings

        assert Settings.from_env(env).cluster_endpoints == (Given("prod", ENDPOINT, CA),)
    plain = lambda_environment(config_from_mapping({"clusters": "a"}), notification_topic_arn="t")
    assert "CLUSTER_ENDPOINTS" not in plain


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        ("{nope", "not a JSON object"),
        ({"prod": {"endpoint": ENDPOINT}}, "prod: expected exactly the keys endpoint, certificateAuthorityData"),
        ({"other": {"endpoint": ENDPOINT, "certificateAuthorityData": CA}}, "'other' is not one of clusters (prod)"),
        (
            {"prod": {"endpoint": "prod.example.com", "certificateAuthorityData": CA}},
            "CLUSTER_ENDPOINTS: prod: endpoint 'prod.example.com' is not an https:// URL",
        ),
        (
            {"prod": {"endpoint": ENDPOINT, "certificateAuthorityData": "LS0tLS1CRUdJTg=="}},
            "CLUSTER_ENDPOINTS: prod: certificateAuthorityData is not base64 of a PEM CA certificate",
        ),
    ],
)
def test_bad_cluster_endpoints_name_the_key_and_the_cluster(given: Any, fragment: str) -> None:
    raw = given if isinstance(given, str) else json.dumps(given)
    with pytest.raises(ConfigError) as raised:
        config_from_mapping({"clusters": "prod", "clusterEndpoints": raw})
    assert raised.value.key == "clusterEndpoints"
    assert fragment in str(raised.value)


def test_cluster_endpoints_must_fit_lambdas_4_kb_of_environment() -> None:
    big = base64.b64encode(other_ca_pem() * 2).decode()  # about the size of an EKS cluster's RSA CA
    given = {name: ClusterEndpoint(ENDPOINT, big) for name in ("a", "b", "c")}
    with pytest.raises(ConfigError) as raised:
        OrchestratorConfig(clusters=("a", "b", "c"), cluster_endpoints=given)
    assert raised.value.key == "cluster_endpoints"
    assert "over Lambda's 4096" in str(raised.value) and "fewer clusters" in str(raised.value)
    assert OrchestratorConfig(clusters=("a", "b", "c"), cluster_endpoints={"a": given["a"]}).cluster_endpoints


def test_cluster_endpoints_known_only_at_deploy_are_left_to_the_function() -> None:
    """An `aws_eks.Cluster` in the same app gives tokens: resolved at deploy, checked by the function at cold start."""
    token = "${Token[TOKEN.123]}"
    config = OrchestratorConfig(clusters=("prod",), cluster_endpoints={"prod": ClusterEndpoint(token, token)})
    env = lambda_environment(config, notification_topic_arn="t")
    assert json.loads(env["CLUSTER_ENDPOINTS"]) == {"prod": {"endpoint": token, "certificateAuthorityData": token}}
    with pytest.raises(ConfigError, match="is not an https:// URL"):
        OrchestratorConfig(clusters=("prod",), cluster_endpoints={"prod": ClusterEndpoint("http://x", token)})

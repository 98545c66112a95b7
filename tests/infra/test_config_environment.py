"""The Lambda environment the construct derives from its config: pure, no jsii. Its variables are the ones the
function's settings code reads, and what we deploy is what the function accepts."""

from __future__ import annotations

from typing import Any

import pytest
from infra.config import WORKFLOW_VARIABLES, config_from_mapping
from infra.environment import lambda_environment

from drain_orchestrator import workflow_settings
from tests.infra.conftest import MULTI_VPC


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

"""WorkflowSettings: defaults, parsing, and errors that name the variable (pure, no I/O)."""

from __future__ import annotations

import pytest

from drain_orchestrator.settings import SettingsError
from drain_orchestrator.workflow_settings import WorkflowSettings


def test_defaults_are_a_node_going_away() -> None:
    s = WorkflowSettings.from_env({})
    assert s.delete_emptydir_data and s.force and not s.evict_daemonsets
    assert s.grace_period is None
    assert s.force_delete_on_deadline
    assert s.lifecycle_result_on_failure == "CONTINUE" and s.launch_timeout_result == "ABANDON"
    assert s.deadline_asg_terminate is None and s.deadline_state_change == 60
    assert s.min_drain_seconds == 30  # a drain's first half minute is always kubectl's (no deadline policy)
    assert not s.dry_run


def test_values_are_parsed() -> None:
    s = WorkflowSettings.from_env(
        {
            "DRAIN_FORCE": "false",
            "DRAIN_GRACE_PERIOD": "30",
            "DRAIN_TAINT": "example.com/draining:NoExecute",
            "LIFECYCLE_RESULT_ON_FAILURE": "abandon",
            "DEADLINE_ASG_TERMINATE_SECONDS": "600",
            "MAX_CONCURRENT_NODES": "10",
            "DRY_RUN": "yes",
        }
    )
    assert not s.force and s.grace_period == 30
    assert s.taint == ("example.com/draining", "NoExecute")
    assert s.lifecycle_result_on_failure == "ABANDON"
    assert s.deadline_asg_terminate == 600 and s.max_concurrent_nodes == 10 and s.dry_run


def test_surge_blocked_pods_defaults_to_annotated_and_takes_each_mode() -> None:
    assert WorkflowSettings.from_env({}).surge_blocked_pods == "annotated"
    for mode in ("never", "annotated", "always"):
        assert WorkflowSettings.from_env({"SURGE_BLOCKED_PODS": mode.upper()}).surge_blocked_pods == mode


def test_taint_effect_defaults_to_noschedule() -> None:
    assert WorkflowSettings.from_env({"DRAIN_TAINT": "k"}).taint == ("k", "NoSchedule")


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("DRAIN_FORCE", "maybe", "expected true or false"),
        ("DRAIN_GRACE_PERIOD", "-1", "expected a number between 0 and 172800"),
        ("DRAIN_PASS_SECONDS", "900", "between 5 and 840"),
        ("MAX_CONCURRENT_NODES", "0", "between 1 and 100"),
        ("DEADLINE_STATE_CHANGE_SECONDS", "soon", "whole number of seconds"),
        ("LIFECYCLE_RESULT_ON_FAILURE", "RETRY", "expected CONTINUE or ABANDON"),
        ("DRAIN_TAINT", "k:Sometimes", "expected 'key' or 'key:"),
        ("DRAIN_TAINT", "bad_key=x/y!:NoSchedule", "a value cannot be set"),
        ("DRAIN_TAINT", "bad key", "name 'bad key' must be 1-63 letters"),
        ("DRAIN_TAINT", "-k", "starting and ending with a letter"),
        ("DRAIN_TAINT", "k" * 64, "must be 1-63"),
        ("DRAIN_TAINT", "Example.com/k", "prefix 'Example.com' is not a DNS subdomain"),
        ("DRAIN_TAINT", "/k", "is not a DNS subdomain"),
        ("DRAIN_TAINT", "a/b/c", "is not a DNS subdomain"),
        ("DEADLINE_STATE_CHANGE_SECONDS", "99999999999999999999", "between 1 and 172800"),
        ("DEADLINE_STATE_CHANGE_SECONDS", "172801", "between 1 and 172800"),
        ("DEADLINE_REBALANCE_SECONDS", "1_000", "digits 0-9"),
        ("DEADLINE_ASG_TERMINATE_SECONDS", "\uff16\uff10", "digits 0-9"),  # full-width "60"
        ("RECHECK_MAX_SECONDS", "3601", "between 1 and 3600"),
        ("RECHECK_MIN_SECONDS", "0", "between 1 and 3600"),
        ("HELD_NOTIFY_SECONDS", "0", "between 1 and 172800"),
        ("HELD_NOTIFY_SECONDS", "ten", "digits 0-9"),
        ("HELD_APPROVAL", "true", "expected on or off"),
        ("LAUNCH_READY_TIMEOUT_SECONDS", "999999", "between 1 and 172800"),
        ("SCHEDULED_CHANGE_LEAD_SECONDS", "604801", "between 0 and 604800"),
        ("DRAIN_SKIP_WAIT_FOR_DELETE_TIMEOUT", "1e3", "whole number"),
        ("POWERTOOLS_LOG_LEVEL", "junk", "expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        ("LOG_LEVEL", "10", "expected one of DEBUG"),
        ("SURGE_BLOCKED_PODS", "sometimes", "expected never, annotated"),
        ("MIN_DRAIN_SECONDS", "5", "between 10 and 3600"),
        ("MIN_DRAIN_SECONDS", "3601", "between 10 and 3600"),
        ("MIN_DRAIN_SECONDS", "half a minute", "digits 0-9"),
        ("SURGE_MAX_REPLICAS", "0", "between 1 and 1000"),
        ("SURGE_MAX_REPLICAS", "lots", "digits 0-9"),
        ("POLICY_HOLD_MAX_SECONDS", "-1", "between 0 and 172800"),
        ("POLICY_HOLD_MAX_SECONDS", "1h", "digits 0-9"),
    ],
)
def test_bad_values_name_the_variable(variable: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as err:
        WorkflowSettings.from_env({variable: value})
    assert err.value.variable == variable
    assert str(err.value).startswith(f"{variable}: ") and expected in str(err.value)


def test_held_approval_is_off_unless_on() -> None:
    assert WorkflowSettings.from_env({}).held_approval is False
    assert WorkflowSettings.from_env({"HELD_APPROVAL": " ON "}).held_approval is True
    assert WorkflowSettings.from_env({"HELD_APPROVAL": "off"}).held_approval is False


def test_recheck_bounds_must_be_ordered() -> None:
    with pytest.raises(SettingsError) as err:
        WorkflowSettings.from_env({"RECHECK_MIN_SECONDS": "60", "RECHECK_MAX_SECONDS": "10"})
    assert err.value.variable == "RECHECK_MAX_SECONDS"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("node.kubernetes.io/draining", ("node.kubernetes.io/draining", "NoSchedule")),
        ("a.b-c/K_1.x:PreferNoSchedule", ("a.b-c/K_1.x", "PreferNoSchedule")),
        ("k" * 63 + ":NoExecute", ("k" * 63, "NoExecute")),
    ],
)
def test_taint_keys_follow_kubernetes_qualified_names(raw: str, expected: tuple[str, str]) -> None:
    assert WorkflowSettings.from_env({"DRAIN_TAINT": raw}).taint == expected


def test_ascii_digits_with_sign_and_log_levels_in_any_case_are_accepted() -> None:
    s = WorkflowSettings.from_env({"DEADLINE_REBALANCE_SECONDS": "+600", "POWERTOOLS_LOG_LEVEL": "debug"})
    assert s.deadline_rebalance == 600


def test_an_unknown_log_level_does_not_break_importing_the_handler() -> None:
    import subprocess
    import sys

    code = (
        "import drain_orchestrator.handler\n"
        "from drain_orchestrator.workflow import runtime\n"
        "from drain_orchestrator.settings import SettingsError\n"
        "try:\n    runtime.load_config()\nexcept SettingsError as e:\n    print(e.variable)\n"
    )
    env = {"POWERTOOLS_LOG_LEVEL": "junk", "CLUSTER_NAMES": "blue", "PATH": "", "AWS_DEFAULT_REGION": "us-east-1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "POWERTOOLS_LOG_LEVEL", out.stderr


def test_the_bounds_on_namespace_users_have_defaults_and_can_be_set() -> None:
    d = WorkflowSettings.from_env({})
    assert (d.policy_hold_max_seconds, d.surge_max_replicas) == (3600, 5)
    s = WorkflowSettings.from_env({"POLICY_HOLD_MAX_SECONDS": "0", "SURGE_MAX_REPLICAS": "20"})
    assert (s.policy_hold_max_seconds, s.surge_max_replicas) == (0, 20)

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


def test_taint_effect_defaults_to_noschedule() -> None:
    assert WorkflowSettings.from_env({"DRAIN_TAINT": "k"}).taint == ("k", "NoSchedule")


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("DRAIN_FORCE", "maybe", "expected true or false"),
        ("DRAIN_GRACE_PERIOD", "-1", "expected a number >= 0"),
        ("DRAIN_PASS_SECONDS", "900", "between 5 and 840"),
        ("MAX_CONCURRENT_NODES", "0", "between 1 and 100"),
        ("DEADLINE_STATE_CHANGE_SECONDS", "soon", "whole number of seconds"),
        ("LIFECYCLE_RESULT_ON_FAILURE", "RETRY", "expected CONTINUE or ABANDON"),
        ("DRAIN_TAINT", "k:Sometimes", "expected 'key' or 'key:"),
    ],
)
def test_bad_values_name_the_variable(variable: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as err:
        WorkflowSettings.from_env({variable: value})
    assert err.value.variable == variable
    assert str(err.value).startswith(f"{variable}: ") and expected in str(err.value)


def test_recheck_bounds_must_be_ordered() -> None:
    with pytest.raises(SettingsError) as err:
        WorkflowSettings.from_env({"RECHECK_MIN_SECONDS": "60", "RECHECK_MAX_SECONDS": "10"})
    assert err.value.variable == "RECHECK_MAX_SECONDS"

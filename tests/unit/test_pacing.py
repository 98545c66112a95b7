"""The pacing of held drains and the durable-operation bound every accepted setting keeps (pure)."""

from __future__ import annotations

import pytest

from drain_orchestrator import pacing, workflow_settings
from drain_orchestrator.settings import SettingsError
from drain_orchestrator.workflow_settings import WorkflowSettings


def test_held_waits_double_from_the_recheck_minimum_to_their_own_cap() -> None:
    ws = WorkflowSettings()
    assert [pacing.held_wait(k, ws) for k in range(10)] == [5, 10, 20, 40, 80, 160, 320, 640, 900, 900]


def test_a_held_wait_is_cut_at_the_first_thing_due_ahead_only() -> None:
    ws = WorkflowSettings()
    assert pacing.held_recheck(9, 1000.0, ws, []) == 900
    assert pacing.held_recheck(9, 1000.0, ws, [1100.0, 1300.0]) == 100  # e.g. the deadline policy's force time
    assert pacing.held_recheck(9, 1000.0, ws, [900.0]) == 900  # already past: not a reason to wake
    assert pacing.held_recheck(0, 1000.0, ws, [1000.2]) == 1.0


def test_gate_checks_stay_fast_while_a_deregistration_delay_may_end_then_back_off() -> None:
    ws = WorkflowSettings()
    fast = [pacing.gate_recheck_delay(k, ws) for k in range(pacing.GATE_FAST_CHECKS)]
    assert max(fast) == pacing.GATE_RECHECK_MAX_SECONDS
    slow = [pacing.gate_recheck_delay(pacing.GATE_FAST_CHECKS + k, ws) for k in range(8)]
    assert slow == sorted(slow) and slow[0] == 30 and slow[-1] == ws.held_recheck_max_seconds


def test_default_settings_stay_under_the_operation_and_checkpoint_limits_for_any_hook() -> None:
    b = pacing.worst_case_any_hook(WorkflowSettings())
    assert b.operations <= pacing.MAX_DURABLE_OPERATIONS
    assert b.checkpoint_bytes <= pacing.MAX_CHECKPOINT_BYTES
    assert b.horizon <= 48 * 3600 == pacing.worst_case(WorkflowSettings(), 7200).horizon


def test_a_held_loop_of_48_h_costs_a_few_hundred_operations() -> None:
    ws = WorkflowSettings()
    beat = pacing.heartbeat_interval(3600)
    held = pacing.paced_loop(48 * 3600, 0.0, 1, lambda k: pacing.held_wait(k, ws), beat, through_beats=True)
    # ~192 passes, their waits of 15 min, 144 heartbeats and the waits they cut in two
    assert 600 <= held.operations <= 750
    # a heartbeat no longer brings a pass with it
    assert held.operations < pacing.paced_loop(48 * 3600, 0.0, 1, lambda k: pacing.held_wait(k, ws), beat).operations


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"DRAIN_PASS_SECONDS": "5", "RECHECK_MIN_SECONDS": "1", "RECHECK_MAX_SECONDS": "5"}, "DRAIN_PASS_SECONDS"),
        ({"HELD_RECHECK_MAX_SECONDS": "5"}, "DRAIN_PASS_SECONDS"),
        (
            {
                "DEADLINE_REBALANCE_SECONDS": "172800",
                "DEADLINE_ASG_TERMINATE_SECONDS": "600",
                "DRAIN_PASS_SECONDS": "60",
                "RECHECK_MAX_SECONDS": "5",
            },
            "DRAIN_PASS_SECONDS",
        ),
    ],
)
def test_settings_that_could_exceed_the_limits_are_refused_naming_the_variables(
    env: dict[str, str], variable: str
) -> None:
    with pytest.raises(SettingsError) as err:
        WorkflowSettings.from_env(env)
    assert err.value.variable == variable
    for name in ("DRAIN_PASS_SECONDS", "RECHECK_MAX_SECONDS", "HELD_RECHECK_MAX_SECONDS"):
        assert name in str(err.value)
    assert "durable operations" in str(err.value)


def test_the_cold_start_skips_the_model_only_for_the_very_settings_checked_at_synth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refused = {"HELD_RECHECK_MAX_SECONDS": "5"}
    checked = {"DRAIN_PASS_SECONDS": "60"}
    digest = workflow_settings.bound_digest(WorkflowSettings.from_env(checked))
    mark = workflow_settings.BOUND_CHECKED_VARIABLE
    # another setting's digest (or a stale one) does not let settings past the bound: they are simulated and refused
    for stale in (digest, workflow_settings.bound_digest(WorkflowSettings()), "0" * 32):
        with pytest.raises(SettingsError, match="durable operations"):
            WorkflowSettings.from_env({**refused, mark: stale})
    simulated: list[WorkflowSettings] = []
    real = pacing.worst_case_any_hook
    monkeypatch.setattr(pacing, "worst_case_any_hook", lambda ws: simulated.append(ws) or real(ws))
    assert WorkflowSettings.from_env({**checked, mark: digest}) == WorkflowSettings.from_env(checked)
    assert len(simulated) == 1  # the settings without their digest only
    # the digest names the model too: a different operations cap is a different check
    monkeypatch.setattr(pacing, "MAX_DURABLE_OPERATIONS", pacing.MAX_DURABLE_OPERATIONS - 1)
    assert workflow_settings.bound_digest(WorkflowSettings.from_env(checked)) != digest


def test_a_shorter_lifecycle_cap_admits_faster_pacing() -> None:
    fast = {"DRAIN_PASS_SECONDS": "5", "RECHECK_MIN_SECONDS": "1", "RECHECK_MAX_SECONDS": "5"}
    ws = WorkflowSettings.from_env(
        {**fast, "DEADLINE_ASG_TERMINATE_SECONDS": "3600", "DEADLINE_REBALANCE_SECONDS": "600"}
    )
    assert pacing.worst_case_any_hook(ws).operations <= pacing.MAX_DURABLE_OPERATIONS


def test_held_recheck_max_below_the_recheck_minimum_is_refused() -> None:
    with pytest.raises(SettingsError, match="HELD_RECHECK_MAX_SECONDS: must be >= RECHECK_MIN_SECONDS"):
        WorkflowSettings.from_env({"RECHECK_MIN_SECONDS": "30", "HELD_RECHECK_MAX_SECONDS": "20"})


def test_the_bound_counts_a_pass_and_a_wait_for_each_quick_look_at_a_rollout(monkeypatch: pytest.MonkeyPatch) -> None:
    ws = WorkflowSettings()
    beat = pacing.heartbeat_interval(3600)
    held = pacing.paced_loop(48 * 3600, 0.0, 1, lambda k: pacing.held_wait(k, ws), beat, through_beats=True)
    monkeypatch.setattr(pacing, "ROLLOUT_FAST_CHECKS", 1000)  # so many that the held path is the worst
    b = pacing.worst_case(ws, 3600)
    assert b.path == "held passes"
    queued = 2 * pacing.QUEUE_MAX_WAITS  # each wait for a far turn: one more pass and wait
    assert b.operations == pacing.FIXED_OPERATIONS + held.operations + 2 * 1000 + queued + 3 * pacing.GATE_FAST_CHECKS
    assert [pacing.rollout_recheck(k) for k in (0, 999, 1000)] == [pacing.ROLLOUT_RECHECK_SECONDS] * 2 + [None]

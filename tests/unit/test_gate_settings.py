"""Settings of the gates between a drain and its verdict: defaults, which drains they apply to, clear errors."""

from __future__ import annotations

import pytest

from drain_orchestrator import deadlines
from drain_orchestrator.settings import SettingsError
from drain_orchestrator.workflow.gate_steps import describe
from drain_orchestrator.workflow_settings import WorkflowSettings

ARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web-tg/50dc6c495c0c9188"


def test_gates_hold_lifecycle_drains_by_default_and_out_of_service_is_off() -> None:
    s = WorkflowSettings.from_env({})
    assert s.wait_for_deregistration == "lifecycle" and s.wait_for_volume_detach == "lifecycle"
    assert s.gate_applies(s.wait_for_deregistration, lifecycle=True)
    assert not s.gate_applies(s.wait_for_deregistration, lifecycle=False)
    assert not s.out_of_service_taint and s.target_group_arns == ()


@pytest.mark.parametrize(
    ("raw", "lifecycle", "other"),
    [("always", True, True), ("never", False, False), ("false", False, False), ("TRUE", True, False)],
)
def test_scope_values(raw: str, lifecycle: bool, other: bool) -> None:
    s = WorkflowSettings.from_env({"WAIT_FOR_DEREGISTRATION": raw})
    assert s.gate_applies(s.wait_for_deregistration, lifecycle=True) is lifecycle
    assert s.gate_applies(s.wait_for_deregistration, lifecycle=False) is other


def test_dry_run_never_waits_on_a_gate() -> None:
    s = WorkflowSettings.from_env({"WAIT_FOR_DEREGISTRATION": "always", "DRY_RUN": "true"})
    assert not s.gate_applies(s.wait_for_deregistration, lifecycle=True)


@pytest.mark.parametrize("name", ["WAIT_FOR_DEREGISTRATION", "WAIT_FOR_VOLUME_DETACH"])
def test_bad_scope_names_the_variable(name: str) -> None:
    with pytest.raises(SettingsError, match=f"^{name}: 'sometimes': expected lifecycle, always or never"):
        WorkflowSettings.from_env({name: "sometimes"})


def test_target_group_arns_are_validated() -> None:
    s = WorkflowSettings.from_env({"TARGET_GROUP_ARNS": f" {ARN} ,"})
    assert s.target_group_arns == (ARN,)
    with pytest.raises(SettingsError, match=r"^TARGET_GROUP_ARNS: 'web-tg': expected comma-separated target group"):
        WorkflowSettings.from_env({"TARGET_GROUP_ARNS": f"{ARN},web-tg"})


def test_gate_rechecks_double_up_to_fifteen_seconds() -> None:
    ws = WorkflowSettings.from_env({"RECHECK_MIN_SECONDS": "2", "RECHECK_MAX_SECONDS": "120"})
    assert [deadlines.gate_recheck_delay(n, ws) for n in range(5)] == [2, 4, 8, 15, 15]


def test_event_message_names_the_waits_and_the_reason() -> None:
    assert describe(None) == ""
    gates = {
        "load_balancers": {"held": ["tg (i-1)"], "waited_seconds": 61.2},
        "volumes": {"held": [], "waited_seconds": 0.0},
        "reason": "gate: volumes still attached: va-1 (pv-1)",
    }
    assert describe(gates) == (
        "; waited 61 s for load-balancer deregistration; gate: volumes still attached: va-1 (pv-1)"
    )

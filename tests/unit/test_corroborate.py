"""What the orchestrator believes of an event (corroborate.py, lifecycle_grant.py): pure rules, no I/O."""

from __future__ import annotations

from dataclasses import replace

import pytest

from drain_orchestrator.corroborate import (
    STALE_AFTER_SECONDS,
    age_effect,
    contradiction,
    corroborate,
    out_of_service_allowed,
)
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.interruption import Interruption, LifecycleRef
from drain_orchestrator.lifecycle_grant import denial_warning, lifecycle_granted
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.settings import Settings
from drain_orchestrator.workflow_settings import WorkflowSettings

T0 = 1_800_000_000.0
WS = WorkflowSettings.from_env({})
IID = "i-0123456789abcdef0"
TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
HOOK = LifecycleRef("ng-blue", "drain", "token", TERMINATING)
OWNED = Decision(IID, True, "blue", Reason.OWNED_INSTANCE_TAG, "drain")


def _event(kind: str, **kw: object) -> Interruption:
    base = Interruption(kind, "e", T0, "us-east-1", "1", (IID,), None, "x")  # type: ignore[arg-type]
    return replace(base, **kw)  # type: ignore[arg-type]


def _facts(state: str = "running", **kw: object) -> InstanceFacts:
    return replace(InstanceFacts(IID, state, "ip-10-0-0-1.ec2.internal", "us-east-1a", {}, "ng-blue"), **kw)  # type: ignore[arg-type]


def test_an_interruption_whose_moment_long_passed_for_a_running_instance_is_stale() -> None:
    spot = _event("spot-interruption", deadline=T0 + 120)
    assert contradiction(_facts(), spot, T0 + 30, WS) is None  # fresh
    assert contradiction(_facts(), spot, T0 + 120 + STALE_AFTER_SECONDS, WS) is None  # late, not stale yet
    thirty_min = T0 + 1800
    assert contradiction(_facts(), spot, thirty_min, WS) is Reason.STALE_EVENT
    for gone in ("shutting-down", "terminated", "stopping", "stopped"):  # it did happen: still acted on
        assert contradiction(_facts(gone), spot, thirty_min, WS) is None, gone
    declined = corroborate(OWNED, _facts(), spot, thirty_min, WS)
    assert (declined.reason, declined.action, declined.owned) == (Reason.STALE_EVENT, "skip", True)


def test_a_scheduled_change_is_stale_only_after_its_window_and_a_rebalance_after_its_budget() -> None:
    window = _event("scheduled-change", deadline=T0 + 3600, window_start=T0 + 3600, window_end=T0 + 7200)
    assert contradiction(_facts(), window, T0 + 7000, WS) is None  # inside the window
    assert contradiction(_facts(), window, T0 + 7200 + STALE_AFTER_SECONDS + 1, WS) is Reason.STALE_EVENT
    rebalance = _event("rebalance")
    assert contradiction(_facts(), rebalance, T0 + WS.deadline_rebalance, WS) is None
    assert contradiction(_facts(), rebalance, T0 + WS.deadline_rebalance + 200, WS) is Reason.STALE_EVENT


@pytest.mark.parametrize(
    ("said", "ec2", "contradicted"),
    [
        ("stopping", "running", True),
        ("stopping", "pending", True),  # stopped and started again since
        ("stopping", "stopped", False),
        ("stopping", "terminated", False),
        ("stopped", "stopping", True),
        ("shutting-down", "stopped", True),
        ("shutting-down", "terminated", False),
        ("terminated", "running", True),  # a forged terminated state for a running instance
        ("terminated", "shutting-down", True),
        ("terminated", "terminated", False),
        ("stopping", "unknown", False),  # EC2 did not say: nothing to contradict
    ],
)
def test_a_state_change_must_be_where_ec2_is_or_behind_it(said: str, ec2: str, contradicted: bool) -> None:
    event = _event("state-change", state=said)
    expected = Reason.STATE_CONTRADICTS_EVENT if contradicted else None
    assert contradiction(_facts(ec2), event, T0 + 5, WS) is expected
    assert contradiction(_facts(ec2), event, T0 + 86_400, WS) is expected  # its age changes nothing


def test_a_lifecycle_event_needs_its_action_waiting_in_the_events_group() -> None:
    event = _event("asg-terminate", lifecycle=HOOK, deadline=T0 + 48 * 3600)
    waiting = _facts().with_group("ng-blue", "Terminating:Wait")
    assert contradiction(waiting, event, T0 + 86_400, WS) is None  # a day old, still waiting: acted on
    assert contradiction(_facts().with_group("ng-blue", "Warmed:Terminating:Wait"), event, T0, WS) is None
    for state in ("Terminating:Proceed", "InService", "Terminated", "Terminating:Retained"):
        assert contradiction(_facts().with_group("ng-blue", state), event, T0, WS) is Reason.ACTION_NOT_PENDING
    assert contradiction(_facts().with_group(None, None), event, T0, WS) is Reason.ACTION_NOT_PENDING
    other = _facts().with_group("ng-other", "Terminating:Wait")
    assert contradiction(other, event, T0, WS) is Reason.GROUP_MISMATCH
    launch = _event("asg-launch", lifecycle=replace(HOOK, transition="autoscaling:EC2_INSTANCE_LAUNCHING"))
    assert contradiction(_facts("pending").with_group("ng-blue", "Pending:Wait"), launch, T0, WS) is None
    assert contradiction(waiting, launch, T0, WS) is Reason.ACTION_NOT_PENDING
    assert contradiction(_facts(), event, T0, WS) is None  # Auto Scaling not asked: nothing to go by


def test_decisions_that_do_not_act_are_left_as_they_are() -> None:
    stale = _event("spot-interruption", deadline=T0)
    for decision in (
        Decision(IID, False, None, Reason.UNTAGGED, "skip"),
        replace(OWNED, reason=Reason.KIND_IGNORED, action="skip"),
    ):
        assert corroborate(decision, _facts(), stale, T0 + 86_400, WS) == decision
    assert corroborate(OWNED, None, stale, T0 + 86_400, WS) == OWNED


def test_the_out_of_service_taint_needs_ec2_to_report_the_instance_down() -> None:
    assert [
        s for s in ("running", "stopping", "stopped", "shutting-down", "terminated") if out_of_service_allowed(s)
    ] == [
        "stopped",
        "terminated",
    ]
    assert not out_of_service_allowed(None)


def test_explain_says_how_old_the_event_is_and_what_that_changes() -> None:
    spot = age_effect(_event("spot-interruption", deadline=T0 + 120), T0 + 1800, WS)
    assert spot["age_seconds"] == 1800 and spot["past_moment_seconds"] == 1680 and spot["stale_if_running"]
    hook = age_effect(_event("asg-terminate", lifecycle=HOOK), T0 + 7200, WS)
    assert "past_moment_seconds" not in hook and "action" in str(hook["freshness"])


BLUE = Settings.from_env({"CLUSTER_NAMES": "blue"})


@pytest.mark.parametrize(
    ("settings", "tags", "granted"),
    [
        (BLUE, {"kubernetes.io/cluster/blue": "owned"}, True),
        (BLUE, {"kubernetes.io/cluster/blue": "shared"}, True),
        (BLUE, {"kubernetes.io/cluster/blue": "yes"}, False),
        (BLUE, {"kubernetes.io/cluster/green": "owned"}, False),
        (BLUE, {"eks:cluster-name": "blue"}, True),
        (BLUE, {"eks:cluster-name": "green"}, False),
        (BLUE, {}, False),  # ownership from the instance's own tags: the group's hook cannot be answered
        (Settings.from_env({"CLUSTER_NAMES": "blue", "OWNERSHIP_TAG": "team=infra"}), {"team": "infra"}, True),
        (Settings.from_env({"CLUSTER_NAMES": "blue", "OWNERSHIP_TAG": "team=infra"}), {"team": "web"}, False),
        (Settings.from_env({"CLUSTER_NAMES": "blue", "OWNERSHIP_TAG": "drains-for"}), {"drains-for": "blue"}, True),
        (Settings.from_env({"CLUSTER_NAMES": "blue", "OWNERSHIP_TAG": "drains-for"}), {"drains-for": "red"}, False),
    ],
)
def test_the_lifecycle_grant_follows_the_policys_tag_conditions(
    settings: Settings, tags: dict[str, str], granted: bool
) -> None:
    assert lifecycle_granted(tags, settings) is granted
    warning = denial_warning("ng-1", tags, settings)
    assert (warning is None) is granted
    if warning is not None:
        assert "ng-1" in warning and "lifecycle-access-denied" in warning

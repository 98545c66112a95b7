"""The deadline of each kind of drain and the pacing that follows from it (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from drain_orchestrator import deadlines
from drain_orchestrator.interruption import Interruption, LifecycleRef
from drain_orchestrator.kinds import KINDS
from drain_orchestrator.workflow_settings import WorkflowSettings

T0 = 1_800_000_000.0
WS = WorkflowSettings.from_env({})
HOOK = LifecycleRef("asg", "drain", "token", "autoscaling:EC2_INSTANCE_TERMINATING")


def _event(kind: str, **kw: object) -> Interruption:
    base = Interruption(
        kind=kind,  # type: ignore[arg-type]
        event_id="e",
        event_time=T0,
        region="us-east-1",
        account="1",
        instance_ids=("i-0123456789abcdef0",),
        deadline=None,
        detail_type="x",
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def test_global_timeout_is_the_smallest_of_48h_100_heartbeats_and_the_reported_value() -> None:
    assert deadlines.hook_global_timeout(300, None) == 30_000
    assert deadlines.hook_global_timeout(3600, 172_800) == 172_800
    assert deadlines.hook_global_timeout(7200, None) == 48 * 3600
    assert deadlines.hook_global_timeout(300, 600) == 600


@pytest.mark.parametrize("timeout", [30, 31, 60, 300, 7200])
def test_heartbeat_interval_leaves_room_for_two_more_tries(timeout: int) -> None:
    interval = deadlines.heartbeat_interval(timeout)
    assert 3 * interval <= timeout
    assert interval >= 5


def test_unknown_hook_timeout_beats_often_enough_for_the_smallest_hook() -> None:
    assert 3 * deadlines.heartbeat_interval(None) <= deadlines.MIN_HEARTBEAT_TIMEOUT


def test_asg_terminate_uses_the_hook_lifetime_capped_by_the_setting() -> None:
    event = _event("asg-terminate", lifecycle=HOOK, deadline=T0 + 48 * 3600)
    assert deadlines.drain_deadline(event, WS, 3600) == T0 + 3600
    assert deadlines.drain_deadline(event, WS, None) == T0 + 48 * 3600  # the hook could not be read
    capped = WorkflowSettings.from_env({"DEADLINE_ASG_TERMINATE_SECONDS": "90"})
    assert deadlines.drain_deadline(event, capped, 3600) == T0 + 90


def test_state_change_rebalance_and_events_without_deadline() -> None:
    ws = WorkflowSettings.from_env({"DEADLINE_STATE_CHANGE_SECONDS": "45", "DEADLINE_REBALANCE_SECONDS": "600"})
    assert deadlines.drain_deadline(_event("state-change", deadline=T0 + 1), ws) == T0 + 45
    assert deadlines.drain_deadline(_event("rebalance"), ws) == T0 + 600
    assert deadlines.drain_deadline(_event("spot-interruption", deadline=T0 + 120), ws) == T0 + 120
    assert deadlines.drain_deadline(_event("scheduled-change"), ws) == T0 + 600  # no window: never unbounded


def test_completion_is_retried_past_the_deadline_but_not_past_the_actions_expiry() -> None:
    event = _event("asg-terminate", lifecycle=HOOK)
    assert deadlines.completion_deadline(T0 + 90, event, None) == T0 + 90 + deadlines.COMPLETION_GRACE_SECONDS
    assert deadlines.completion_deadline(T0 + 90, event, 100) == T0 + 100
    assert deadlines.completion_deadline(T0 + 100, event, 100) == T0 + 100


def test_waits_end_by_the_deadline_and_by_the_next_heartbeat() -> None:
    assert deadlines.wait_seconds(T0, 60, T0 + 1000, None) == 60
    assert deadlines.wait_seconds(T0, 60, T0 + 20, None) == 20
    assert deadlines.wait_seconds(T0, 60, T0 + 1000, T0 + 9.2) == 10
    assert deadlines.wait_seconds(T0, 60, T0 - 5, None) == 1  # never zero: a durable wait is at least 1 s


def test_recheck_doubles_up_to_the_maximum_and_pass_budget_stops_at_the_deadline() -> None:
    ws = WorkflowSettings.from_env({"RECHECK_MIN_SECONDS": "5", "RECHECK_MAX_SECONDS": "30"})
    assert [deadlines.recheck_delay(n, ws) for n in range(5)] == [5, 10, 20, 30, 30]
    assert deadlines.pass_budget(T0, T0 + 1000, ws) == ws.drain_pass_seconds
    assert deadlines.pass_budget(T0, T0 + 7, ws) == 7
    assert deadlines.pass_budget(T0, T0 - 3, ws) == 1


def test_decide_is_retried_until_the_event_deadline_at_most_an_hour() -> None:
    assert deadlines.decide_deadline(_event("spot-interruption", deadline=T0 + 120), WS) == T0 + 120
    event = _event("asg-terminate", lifecycle=HOOK, deadline=T0 + 48 * 3600)
    assert deadlines.decide_deadline(event, WS) == T0 + deadlines.DECIDE_RETRY_MAX_SECONDS


def test_a_launch_gives_up_when_the_lambda_does_and_explain_says_so() -> None:
    launch = _event("asg-launch", deadline=T0 + 48 * 3600, lifecycle=replace(HOOK, transition="launching"))
    ws = WorkflowSettings.from_env({"LAUNCH_READY_TIMEOUT_SECONDS": "600"})
    # explain (no start known): from the event; the Lambda: from its first look for the node
    assert deadlines.drain_deadline(launch, ws) == T0 + 600
    assert deadlines.drain_deadline(launch, ws, started=T0 + 7) == T0 + 607
    assert deadlines.drain_deadline(launch, ws, hook_lifetime=3600) == T0 + 600  # the hook's lifetime is no bound
    assert deadlines.decide_deadline(launch, ws) == T0 + deadlines.DECIDE_RETRY_MAX_SECONDS  # as before: the hook's


def test_every_kind_has_a_deadline_rule() -> None:
    for kind in KINDS:
        assert deadlines.drain_deadline(_event(kind), WS) > T0, kind

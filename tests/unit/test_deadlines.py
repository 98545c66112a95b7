"""The deadline of each kind of drain and the pacing that follows from it (pure)."""

from __future__ import annotations

import itertools
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
        # a Capacity Block's deadline is its end-date's (the parser always sets it): a week away here
        event = _event(kind, block_end=T0 + 7 * 86400) if kind.startswith("capacity-block") else _event(kind)
        assert deadlines.drain_deadline(event, WS) > T0, kind


# ---- the drain's clock from what is true now (deadlines.drain_clock) ---------------------------------------------
LIFE = deadlines.ActionLife(heartbeat_timeout=300, global_timeout=30_000, started=T0)


def test_an_events_age_never_shortens_the_respectful_minimum() -> None:
    spot = _event("spot-interruption", deadline=T0 + 120)
    fresh = deadlines.drain_clock(spot, WS, T0 + 2, None)
    assert (fresh.deadline, fresh.respect_until) == (T0 + 120, T0 + 2 + WS.min_drain_seconds)
    late = deadlines.drain_clock(spot, WS, T0 + 1800, None)  # its deadline long past when it arrives
    assert late.deadline == late.respect_until == T0 + 1800 + WS.min_drain_seconds
    state = deadlines.drain_clock(_event("state-change", state="stopping"), WS, T0 + 7200, None)
    assert state.deadline == T0 + 7200 + WS.min_drain_seconds


def test_a_lifecycle_drain_ends_before_its_action_expires_by_what_completion_needs() -> None:
    event = _event("asg-terminate", lifecycle=HOOK, deadline=T0 + 48 * 3600)
    clock = deadlines.drain_clock(event, WS, T0 + 1, LIFE)
    assert clock.expiry == T0 + 30_000
    assert deadlines.completion_reserve(300) == 100  # a heartbeat interval, at most COMPLETION_GRACE_SECONDS
    assert deadlines.completion_reserve(3600) == deadlines.completion_reserve(None)
    assert deadlines.completion_reserve(None) == deadlines.COMPLETION_GRACE_SECONDS
    assert clock.deadline == T0 + 30_000 - 100
    assert clock.deadline < clock.completion_deadline <= clock.expiry - deadlines.EXPIRY_SAFETY_SECONDS
    short = deadlines.ActionLife(heartbeat_timeout=30, global_timeout=150, started=T0)
    tight = deadlines.drain_clock(event, WS, T0 + 1, short)
    assert tight.deadline == T0 + 150 - 10  # a third of the 30 s heartbeat timeout kept for completing it
    assert tight.completion_deadline == T0 + 150 - deadlines.EXPIRY_SAFETY_SECONDS


def test_a_replayed_lifecycle_event_gets_its_full_budget_from_the_drains_start() -> None:
    event = _event("asg-terminate", lifecycle=HOOK, deadline=T0 + 48 * 3600)
    capped = WorkflowSettings.from_env({"DEADLINE_ASG_TERMINATE_SECONDS": "900"})
    long_hook = deadlines.ActionLife(heartbeat_timeout=3600, global_timeout=48 * 3600, started=T0)
    replayed = deadlines.drain_clock(event, capped, T0 + 3 * 3600, long_hook)
    assert replayed.deadline == T0 + 3 * 3600 + 900  # not T0 + 900, three hours ago
    # an action about to expire is never outlived, even at the cost of the respectful minimum: no force then
    ending = deadlines.drain_clock(event, capped, T0 + 48 * 3600 - 60, long_hook)
    assert ending.deadline == T0 + 48 * 3600 - deadlines.COMPLETION_GRACE_SECONDS < ending.respect_until


def test_a_scheduled_change_respects_from_when_it_starts_draining() -> None:
    window = _event("scheduled-change", deadline=T0 + 7200, window_start=T0 + 7200)
    clock = deadlines.drain_clock(window, WS, T0, None)
    assert clock.respect_until == T0 + 7200 - WS.scheduled_change_lead + WS.min_drain_seconds
    assert clock.deadline == T0 + 7200


def test_the_first_pass_ends_with_the_respectful_minimum_only_when_the_deadline_is_near() -> None:
    near, far = T0 + 100, T0 + 30_000
    assert deadlines.pass_budget(T0, near, WS, T0 + 30) == 30
    assert deadlines.pass_budget(T0, far, WS, T0 + 30) == WS.drain_pass_seconds
    assert deadlines.pass_budget(T0 + 31, near, WS, T0 + 30) == 69  # past it: up to the deadline
    assert deadlines.in_respect_window(T0 + 30, T0 + 29) and not deadlines.in_respect_window(T0 + 30, T0 + 30)
    assert not deadlines.in_respect_window(None, T0)  # a plan from before the rule


def test_failed_heartbeats_back_off_but_never_past_an_interval() -> None:
    assert [deadlines.beat_retry_delay(n, 100) for n in range(7)] == [2, 4, 8, 16, 32, 64, 100]
    assert [deadlines.beat_retry_delay(n, 10) for n in range(4)] == [2, 4, 8, 10]
    assert deadlines.beat_retry_delay(30, None) == deadlines.BEAT_RETRY_MAX_SECONDS


def test_failed_heartbeats_are_tried_more_often_as_the_action_nears_its_lapse() -> None:
    """A 30 s hook last kept alive at T0, refused from T0 + 10 on: every retry comes before the lapse at T0 + 30,
    each at most half the time left, so a fault of 20 s costs the action nothing."""
    now, tries = T0 + 10, []
    for n in range(12):
        now += deadlines.beat_retry_delay(n, 10, now, T0 + 30)
        tries.append(now)
    assert all(t < T0 + 30 for t in tries[:5]) and tries[0] == T0 + 12
    assert [round(b - a, 2) for a, b in itertools.pairwise(tries[:4])] == [4, 7, 3.5]  # doubling, then halving


def test_an_action_that_can_no_longer_be_kept_bounds_the_drain() -> None:
    assert deadlines.bounded_by_action(T0 + 9000, WS) == T0 + 9000
    denied = deadlines.bounded_by_action(T0 + 9000, WS, lapses=T0 + 300)
    assert denied == T0 + 300 - deadlines.EXPIRY_SAFETY_SECONDS
    gone = deadlines.bounded_by_action(T0 + 9000, WS, gone_at=T0 + 50)
    assert gone == T0 + 50 + WS.deadline_state_change
    assert LIFE.lapses(None) == T0 + 300 and LIFE.lapses(T0 + 29_900) == T0 + 30_000  # never past the expiry


def test_an_action_still_waiting_past_what_the_events_time_allows_is_taken_as_starting_now() -> None:
    assert deadlines.ActionLife.seen(300, 30_000, T0, T0 + 100).started == T0
    assert deadlines.ActionLife.seen(300, 30_000, T0, T0 + 30_000).started == T0 + 30_000  # event time rewritten
    assert deadlines.ActionLife.seen(300, 30_000, T0 + 60, T0).started == T0  # never in the future

"""When a drain pass counts as held (it then ends early), and the waits that follow it (pure)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from drain_orchestrator import pacing
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.report import BlockedPod, DrainReport, PodReason, SurgeNote
from drain_orchestrator.drain.surge import SurgeStatus
from drain_orchestrator.drain.turn_queue import QUEUE_LOOK_SECONDS, QUEUE_WATCHED_MIN_SECONDS
from drain_orchestrator.engine.held_pass import HoldCheck, held
from drain_orchestrator.engine.parts import DrainParts
from drain_orchestrator.engine.pod_record import PodRecord
from drain_orchestrator.pacing import ROLLOUT_FAST_CHECKS, ROLLOUT_RECHECK_SECONDS
from drain_orchestrator.workflow.held import HeldWatch
from drain_orchestrator.workflow.hold_pace import HoldPace
from drain_orchestrator.workflow.results import PassOutcome
from drain_orchestrator.workflow_settings import WorkflowSettings
from tests.unit.clock_support import FakeClock

NO_CLIENT: Any = None  # the parts looked at here send no request


def _drain() -> DrainParts:
    return DrainParts(NO_CLIENT, "n", DrainOptions(), clock=FakeClock())


def _blocked(*pods: str) -> tuple[DrainParts, DrainReport]:
    state = _drain()
    for p in pods:
        state.pods.by_ident[f"{p}@uid-{p}"] = PodRecord(f"{p}@uid-{p}", waiting_on=[("ns", "web")])
    report = DrainReport(node="n", remaining=list(pods), blocked=[BlockedPod(p, ["web"], "429") for p in pods])
    return state, report


def _held(state: DrainParts, report: DrainReport) -> bool:
    return held(state.pods, state.leaving, report)


def test_pods_refused_by_budgets_or_let_finish_make_a_held_pass() -> None:
    state, report = _blocked("ns/a", "ns/b")
    assert _held(state, report)
    report.remaining.append("ns/job")
    report.held_by_policy.append(PodReason("ns/job", "wait-for-completion"))
    assert _held(state, report)


def test_a_pod_on_its_way_out_or_a_failing_eviction_keeps_the_pass_going() -> None:
    state, report = _blocked("ns/a")
    state.pods.record("ns/b@uid-b").sent = True
    assert not _held(state, report)
    state, report = _blocked("ns/a")
    state.leaving.deletion_times = [1.0]  # a pod the last pass saw terminating
    assert not _held(state, report)
    state, report = _blocked("ns/a")
    report.terminating.append("ns/c")
    assert not _held(state, report)
    state, report = _blocked("ns/a")
    report.remaining.append("ns/w")
    report.failed.append(PodReason("ns/w", "HTTP 500: webhook down"))
    assert not _held(state, report)
    assert not _held(_drain(), DrainReport(node="n", drained=True))


def test_a_quick_check_ends_at_first_look_unless_the_pass_progressed() -> None:
    state, report = _blocked("ns/a")
    assert HoldCheck(linger=30, quick=True).ends(state, report)
    check = HoldCheck(linger=30, quick=True)
    moved = DrainReport(node="n", evicted=["ns/x"], remaining=["ns/a"], blocked=report.blocked)
    assert not check.ends(state, moved)  # it evicted: lingers like a first pass
    assert HoldCheck(linger=0, quick=False).ends(state, report)


def test_a_budget_that_rises_while_other_drains_take_it_keeps_the_pass_watching() -> None:
    state, report = _blocked("ns/a")
    clock = state.clock
    assert isinstance(clock, FakeClock)
    check = HoldCheck(linger=0.05)
    assert not check.ends(state, report)  # the linger starts
    clock.advance(0.06)
    state.budgets.rose_at = clock.mono()  # the budget rose (another drain took it): it is moving
    assert not check.ends(state, report)
    clock.advance(0.06)
    assert check.ends(state, report)  # shut for a whole linger since its last rise: held
    assert HoldCheck(linger=30, quick=True).ends(state, report)  # a pass after a held pass still ends at first look


def test_held_waits_grow_and_start_over_when_a_pass_evicts() -> None:
    ws = WorkflowSettings()
    pace, watch = HoldPace(ws), HeldWatch(10_000)
    report = DrainReport(node="n", remaining=["ns/a"])
    waits = [pace.after(PassOutcome(now=0, report=report, held=True), 0.0, watch) for _ in range(4)]
    assert waits == [5, 10, 20, 40] and pace.after_held
    moved = DrainReport(node="n", evicted=["ns/b"], remaining=["ns/a"])
    assert pace.after(PassOutcome(now=0, report=moved, held=True), 0.0, watch) == 5
    assert pace.after(PassOutcome(now=0, report=report), 0.0, watch) is None and not pace.after_held


def test_a_held_wait_ends_at_the_force_time_and_the_held_notification() -> None:
    pace = HoldPace(WorkflowSettings())
    pace.held_passes = 8
    report = DrainReport(node="n", remaining=["ns/a"])
    assert pace.after(PassOutcome(now=0, report=report, held=True, wake_at=1120.0), 1000.0, HeldWatch(600)) == 120
    watch = HeldWatch(600, since=900.0)
    assert pace.after(PassOutcome(now=0, report=report, held=True), 1000.0, watch) == 500


def test_an_open_approval_keeps_held_waits_within_its_looks() -> None:
    ws = WorkflowSettings()
    pace = HoldPace(ws)
    pace.held_passes = 8
    out = PassOutcome(now=0, report=DrainReport(node="n", remaining=["ns/a"]), held=True)
    # a drain of hours: within the recheck maximum; of 48 h: within the spacing its looks' operations allow
    assert pace.after(out, 0.0, HeldWatch(10), asking=pacing.approval_wait(ws, 7200)) == ws.recheck_max_seconds
    assert pace.after(out, 0.0, HeldWatch(10), asking=pacing.approval_wait(ws, 48 * 3600)) == 346


def test_a_quick_check_that_surged_watches_for_the_replacement_instead_of_ending() -> None:
    state, report = _blocked("ns/a")
    surged = DrainReport(node="n", remaining=["ns/a"], blocked=report.blocked)
    surged.surge.append(
        SurgeNote("Deployment ns/web", SurgeStatus.SURGED.value, "1 replica added", ["ns/a"], "deployment", 1, 2)
    )
    check = HoldCheck(linger=30, quick=True)
    assert not check.ends(state, surged)  # its replacement lifts the budget within seconds: watch for it
    # a surge already in place (no write this pass) or one taken back is no reason to linger
    kept = DrainReport(node="n", remaining=["ns/a"], blocked=report.blocked)
    kept.surge.append(SurgeNote("Deployment ns/web", SurgeStatus.SURGED.value, "1 replica(s) added", ["ns/a"]))
    kept.surge.append(SurgeNote("Deployment ns/api", SurgeStatus.RESTORED.value, "back", [], "deployment", 2, 1))
    assert HoldCheck(linger=30, quick=True).ends(state, kept)


def test_a_surge_waiting_for_a_rollout_looks_again_soon_for_a_bounded_number_of_waits() -> None:
    ws = WorkflowSettings()
    pace, watch = HoldPace(ws), HeldWatch(10_000)
    pace.held_passes = 8  # held long enough that its waits reached HELD_RECHECK_MAX
    rolling = DrainReport(node="n", remaining=["ns/a"])
    rolling.surge.append(SurgeNote("Deployment ns/web", SurgeStatus.ROLLOUT.value, "rollout in progress", ["ns/a"]))
    waits = [pace.after(PassOutcome(now=0, report=rolling, held=True), 0.0, watch) for _ in range(ROLLOUT_FAST_CHECKS)]
    assert waits == [ROLLOUT_RECHECK_SECONDS] * ROLLOUT_FAST_CHECKS
    assert pace.after(PassOutcome(now=0, report=rolling, held=True), 0.0, watch) == ws.held_recheck_max_seconds
    # a paused Deployment waits on a person: the held waits as they are
    paused = DrainReport(node="n", remaining=["ns/a"])
    paused.surge.append(SurgeNote("Deployment ns/web", SurgeStatus.PAUSED.value, "paused", ["ns/a"]))
    fresh = HoldPace(ws)
    fresh.held_passes = 8
    assert fresh.after(PassOutcome(now=0, report=paused, held=True), 0.0, watch) == ws.held_recheck_max_seconds


def _storm(left: int, falls: int) -> tuple[DrainParts, DrainReport]:
    """A drain of the first wave whose pod waits on a budget that ``left`` drains still want, ``falls`` seen."""
    state, report = _blocked("ns/a")
    state.turns.first_wave(left, {("ns", "web"): left}, {("ns", "web")})
    state.turns.falls[("ns", "web")] = falls
    return state, report


def _first_look(monkeypatch: Any, left: int, falls: int) -> tuple[DrainParts, DrainReport, FakeClock, HoldCheck]:
    """A storm's drain (``_storm``) whose first held pass looked once: too soon to judge its turn; draws that make
    it leave when it may."""
    monkeypatch.setattr("drain_orchestrator.engine.held_pass.random.random", lambda: 0.99)
    state, report = _storm(left, falls)
    clock = state.clock
    assert isinstance(clock, FakeClock)
    check = HoldCheck(linger=30)
    assert not check.ends(state, report)  # not yet watched long enough to judge
    return state, report, clock, check


def test_a_storm_drain_whose_turn_is_far_ends_its_pass_queued_once_it_has_watched(monkeypatch: Any) -> None:
    state, report, clock, check = _first_look(monkeypatch, 20, 0)
    assert check.until(clock.mono() + 120) == clock.mono() + QUEUE_LOOK_SECONDS  # the wait ends at the look
    clock.advance(QUEUE_LOOK_SECONDS)
    state.turns.watched(0.0, clock.mono(), read_on=True)  # its wait read the budget's watch all along
    state.turns.falls[("ns", "web")] = 1
    state.budgets.rose_at = clock.mono()  # the budget moves: without the queue, the pass would watch on
    assert check.ends(state, report) and check.queued
    assert check.wake_at is not None and check.wake_at - clock.wall() > 100  # 16 drains ahead, the next in ~10 s
    # a far turn is not a held drain: its wait does not grow the held waits, and the pass after it looks in full
    pace = HoldPace(WorkflowSettings())
    out = PassOutcome(now=0, report=report, held=True, queued=True, wake_at=check.wake_at)
    assert pace.after(out, clock.wall(), HeldWatch(10_000)) == pytest.approx(check.wake_at - clock.wall())
    assert pace.held_passes == 0 and not pace.after_held and pace.after_queued


def test_a_drain_waits_for_far_turns_a_bounded_number_of_times() -> None:
    pace = HoldPace(WorkflowSettings())
    out = PassOutcome(now=0, report=DrainReport(node="n", remaining=["ns/a"]), held=True, queued=True, wake_at=60.0)
    for _ in range(pacing.QUEUE_MAX_WAITS):
        assert pace.may_queue
        assert pace.after(out, 0.0, HeldWatch(10_000)) == 60.0
    assert not pace.may_queue  # its passes no longer end queued: its durable operations stay bounded
    assert pace.after(PassOutcome(now=0, report=out.report), 0.0, HeldWatch(10_000)) is None and not pace.after_queued


def test_a_storm_drain_whose_turn_is_near_or_that_was_drawn_to_stay_watches_on(monkeypatch: Any) -> None:
    draws = iter([0.99, 0.5, 0.0, 0.5])
    monkeypatch.setattr("drain_orchestrator.engine.held_pass.random.random", lambda: next(draws))
    for falls, left in ((8, 10), (1, 20)):  # turns coming fast; then a slow budget, but this drain stays
        state, report = _storm(left, falls)
        clock = state.clock
        assert isinstance(clock, FakeClock)
        check = HoldCheck(linger=30)
        assert not check.ends(state, report)
        clock.advance(QUEUE_LOOK_SECONDS)
        state.turns.watched(0.0, clock.mono(), read_on=True)
        state.budgets.rose_at = clock.mono()
        assert not check.ends(state, report) and not check.queued
        assert check.until(clock.mono() + 120) == clock.mono() + 30  # judged once: back to the linger
    # a budget the first wave did not count (no contenders): never queued
    state, report = _blocked("ns/a")
    check = HoldCheck(linger=30)
    assert not check.ends(state, report) and check.until(1e9) == state.clock.mono() + 30


def test_a_drain_that_may_not_queue_any_more_is_not_made_to_look() -> None:
    state, report = _storm(20, 1)
    state.options = DrainOptions(queue_after=math.inf)  # what a pass gets after its last wait for a far turn
    check = HoldCheck(linger=30)
    assert not check.ends(state, report)
    assert check.until(state.clock.mono() + 120) == state.clock.mono() + 30  # no pass cut at the look


def test_a_drain_near_its_deadline_comes_back_with_half_its_time_left_or_does_not_leave(monkeypatch: Any) -> None:
    monkeypatch.setattr("drain_orchestrator.engine.held_pass.random.random", lambda: 0.99)
    for left_seconds, away in ((30.0, None), (100.0, 50.0), (300.0, 150.0)):
        state, report = _storm(20, 1)
        clock = state.clock
        assert isinstance(clock, FakeClock)
        state.options = DrainOptions(deadline=clock.wall() + QUEUE_LOOK_SECONDS + left_seconds)
        check = HoldCheck(linger=30)
        assert not check.ends(state, report)
        clock.advance(QUEUE_LOOK_SECONDS)
        state.turns.watched(0.0, clock.mono(), read_on=True)
        if away is None:  # 15 s away at most: less than a far turn's 20 s, though the estimate was 170 s
            assert not check.ends(state, report) and not check.queued
        else:
            assert check.ends(state, report) and check.queued
            assert check.wake_at == pytest.approx(clock.wall() + away)


def test_a_pass_s_seconds_count_as_watched_only_once_a_wait_has_read_the_changes_queued_meanwhile() -> None:
    # a drain whose waits read the budget for 4 s, then ran a pass of 16 s, saw 12 falls: 3 a second, not 0.6
    state, _ = _storm(50, 12)
    clock = state.clock
    assert isinstance(clock, FakeClock)
    start = clock.mono()
    clock.advance(4.0)
    state.turns.watched(start, clock.mono(), read_on=True)
    clock.advance(16.0)
    queue = state.turns.queue(("ns", "web"))
    assert queue is not None and queue[2] == pytest.approx(4.0)
    # the next wait reads on from the watch the pass left open: the pass's 16 s are read now, with their falls
    begun = clock.mono()
    clock.advance(2.0)
    state.turns.watched(begun, clock.mono(), read_on=True)
    assert state.turns.watched_seconds == pytest.approx(22.0)
    # a wait that listed the budgets again missed what changed before it: only its own seconds count
    clock.advance(5.0)
    begun = clock.mono()
    clock.advance(3.0)
    state.turns.watched(begun, clock.mono(), read_on=False)
    assert state.turns.watched_seconds == pytest.approx(25.0)


def test_a_drain_whose_watch_was_read_too_briefly_does_not_queue(monkeypatch: Any) -> None:
    state, report, clock, check = _first_look(monkeypatch, 60, 3)
    start = clock.mono()
    clock.advance(QUEUE_WATCHED_MIN_SECONDS - 1)
    state.turns.watched(start, clock.mono(), read_on=True)
    clock.advance(QUEUE_LOOK_SECONDS)  # a long pass: its falls not read yet
    assert not check.ends(state, report) and not check.queued  # judged on 4 s: watches on

"""The drain engine's parts, each on its own (engine/parts.py): the node's view and the pods leaving
(engine/node_view.py), the budget turns (engine/budget_turns.py), what a wait on budgets leaves for the pass after it
(engine/budget_wait.py), and a held pass's wake-up. Every time they keep is on the drain's monotonic clock."""

from __future__ import annotations

from typing import Any

import pytest

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.report import BlockedPod, DrainReport
from drain_orchestrator.engine import budget_turns
from drain_orchestrator.engine.budget_turns import BudgetTurns
from drain_orchestrator.engine.budget_wait import BUDGETS_FRESH_SECONDS, Budgets, BudgetWatch
from drain_orchestrator.engine.held_pass import HoldCheck
from drain_orchestrator.engine.node_view import TURN_LISTING_SECONDS, Leaving, NodeView
from drain_orchestrator.engine.parts import DrainParts
from drain_orchestrator.kube.evict import Outcome
from drain_orchestrator.kube.pods import NodePods, SeenIps
from tests.unit.clock_support import FakeClock

NO_CLIENT: Any = None  # the parts tested here send no request
WEB = ("shop", "web")
OPTIONS = DrainOptions(budget_jitter_slot=0.2, budget_jitter_cap=10.0, settle_seconds=5.0)


def _pod(name: str, deleting_at: float | None = None) -> PodVerdict:
    pod = PodInfo("shop", name, f"uid-{name}", deletion_timestamp=deleting_at)
    return PodVerdict(pod, Verdict.WAIT if deleting_at is not None else Verdict.EVICT)


def test_the_node_view_keeps_the_cordon_on_the_monotonic_clock_and_orders_its_lists_after_the_witness() -> None:
    clock = FakeClock(mono=500.0, wall=1_700_000_000.0)
    view = NodeView(NO_CLIENT, "n1", clock, SeenIps())
    view.cordoned_now(started_at=1_700_000_000.0 - 3)  # another drain cordoned it 3 s ago
    assert view.cordoned and view.cordoned_at == 497.0 and view.looked_at == 500.0
    view.listed(NodePods([{"spec": {}, "status": {"podIPs": [{"ip": "10.0.0.7"}]}}], "41"), sent_at=499.5)
    assert view.pods_version == "41" and view.seen_ips is not None and view.seen_ips.ips == {"10.0.0.7"}
    assert not view.listed_since_witness()  # no witness of the cordon yet
    view.witness_at = 499.8  # the control plane's taint seen after that LIST was sent: it may miss a late pod
    assert not view.listed_since_witness()
    view.listed(NodePods([], "42"), sent_at=clock.mono())
    assert view.listed_since_witness()
    assert view.late_look_at(OPTIONS) == 502.0  # the late look watches until 5 s after the first cordon
    assert view.late_look_at(DrainOptions()) is None  # none asked for (the command line, the flow's passes)
    clock.advance(TURN_LISTING_SECONDS)
    assert view.turn_listing() is view.listing  # young enough for the pass after a turn
    clock.advance(1)
    assert view.turn_listing() is None and view.late_look_at(OPTIONS) is None
    fresh = NodeView(NO_CLIENT, "n1", clock)
    fresh.cordoned_now(None)  # the first cordon: now
    assert fresh.cordoned_at == clock.mono()


def test_a_watch_that_saw_the_pods_evicted_after_the_witness_go_counts_as_a_list_sent_after_it() -> None:
    clock = FakeClock(mono=500.0, wall=1_700_000_000.0)
    view = NodeView(NO_CLIENT, "n1", clock)
    view.listed(NodePods([], "41"), sent_at=500.0)
    view.witness_at = 500.1  # the taint came while the LIST was on its way
    clock.advance(1)
    view.watched_empty(clock.mono(), evicted_at=None)  # only pods already terminating went: not after the witness
    assert view.listed_at == 501.0 and not view.listed_since_witness()
    view.watched_empty(clock.mono(), evicted_at=500.05)  # evictions sent before the witness: their pods might not be
    assert not view.listed_since_witness()
    view.watched_empty(clock.mono(), evicted_at=500.2)  # sent after it: the node the watch shows is from after it
    assert view.listed_since_witness() and view.list_sent_at == 500.2
    view.watched_empty(clock.mono(), evicted_at=None)  # a later wait with nothing sent keeps what the earlier showed
    assert view.list_sent_at == 500.2


class TaintSeen:
    """The node's watch as the view reads it: the taint shows after ``after`` seconds, or never (None)."""

    watchable = True

    def __init__(self, clock: FakeClock, after: float | None) -> None:
        self.clock, self.asked, self.checks = clock, [], 0
        self.shows_at = None if after is None else clock.mono() + after

    def check(self, *, waiting: bool) -> None:
        self.checks += 1  # reads what the watch queued: no request, no time

    def tainted(self, taint: tuple[str, str]) -> bool:
        return self.shows_at is not None and self.clock.mono() >= self.shows_at

    def await_taint(self, taint: tuple[str, str], timeout: float) -> bool:
        self.asked.append(timeout)
        if self.shows_at is not None and self.shows_at <= self.clock.mono() + timeout:
            self.clock.advance(max(0.0, self.shows_at - self.clock.mono()))
            return True
        self.clock.advance(timeout)
        return False


def test_the_witness_is_waited_for_until_witness_seconds_after_the_cordon_and_then_stands_for_it() -> None:
    options = DrainOptions(witness_seconds=2.0)
    clock = FakeClock(mono=500.0, wall=1_700_000_000.0)
    seen = NodeView(NO_CLIENT, "n1", clock)
    seen.cordoned_now(None)
    seen.presence = TaintSeen(clock, after=0.05)  # type: ignore[assignment]
    clock.advance(0.5)  # the drain looked drained half a second after the cordon
    assert seen.await_witness(options, end=1e9) == 500.5 and seen.witnessed  # already there: no wait
    late = NodeView(NO_CLIENT, "n2", clock)
    late.cordoned_now(None)
    late.presence = watch = TaintSeen(clock, after=None)  # type: ignore[assignment]  # no controller taints it
    clock.advance(0.5)
    at = late.await_witness(options, end=1e9)
    assert watch.asked == [1.5] and at == late.cordoned_at + 2.0 and not late.witnessed  # the cap stands for it
    assert late.await_witness(options, end=1e9) == at and watch.asked == [1.5]  # waited for once per drain
    bounded = NodeView(NO_CLIENT, "n3", clock)
    bounded.cordoned_now(None)
    bounded.presence = watch = TaintSeen(clock, after=None)  # type: ignore[assignment]
    assert bounded.await_witness(options, end=clock.mono() + 0.3) and watch.asked == [pytest.approx(0.3)]  # end first


def test_a_cordon_read_from_its_annotation_counts_from_the_latest_second_it_could_have_been() -> None:
    clock = FakeClock(mono=500.0, wall=1_700_000_000.5)
    view = NodeView(NO_CLIENT, "n1", clock)
    view.cordoned_now(1_700_000_000.0 - 3, whole_second=True)  # "…:57Z": cordoned between 57 and 58
    assert view.cordoned_at == 500.0 - 3.5 + 1.0


def test_the_pods_leaving_are_timed_on_the_monotonic_clock_and_a_watch_is_taken_once() -> None:
    clock = FakeClock(mono=10.0, wall=2_000.0)
    leaving = Leaving()
    leaving.after_pass([_pod("a", deleting_at=2_030.0), _pod("b")], only_going=True, clock=clock)
    assert leaving.deletion_times == [40.0] and leaving.uids == {"uid-a"} and leaving.only_going
    leaving.watched_gone = {"uid-a"}
    assert leaving.took() == {"uid-a"} and leaving.took() == set()


def test_a_rise_is_a_turn_for_at_most_what_the_budget_allows_and_none_within_a_lost_race_backoff() -> None:
    clock = FakeClock()
    turns = BudgetTurns(clock)
    waiting = [("shop/a@1", [WEB]), ("shop/b@2", [WEB]), ("shop/c@3", [WEB])]
    assert turns.admitted(waiting, {WEB: 2}) == {"shop/a@1": [WEB], "shop/b@2": [WEB]}
    turns.after_evictions([(Outcome.BLOCKED, [WEB])], OPTIONS, sent_at=clock.mono())
    assert turns.lost == 1 and clock.mono() <= turns.not_before <= clock.mono() + 0.2
    if turns.not_before > clock.mono():
        assert turns.admitted(waiting, {WEB: 2}) == {}  # the budget may already be taken by evictions in flight
    clock.advance(0.2)
    assert turns.admitted(waiting, {WEB: 2})
    turns.after_evictions([(Outcome.EVICTED, [WEB])], OPTIONS, sent_at=clock.mono())
    assert turns.lost == 0 and turns.wanting == 0  # never below 0
    turns.lag.level(WEB, 2)
    turns.lag.seen(WEB, 1, clock.mono() + 0.4)  # the eviction's fall reaches the watch 0.4 s later
    assert turns.lag.measured and turns.slot(OPTIONS) == pytest.approx(0.8)  # two lags


def test_a_first_wave_budgets_hold_off_spans_the_drains_still_wanting_it(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    turns = BudgetTurns(clock)
    turns.first_wave(50, {WEB: 8}, {WEB})
    assert turns.contenders == {WEB: 8} and turns.wanting > 0  # no more drains want it than it has pods
    draws: list[tuple[int, int]] = []
    monkeypatch.setattr(budget_turns, "turn_hold_off", lambda lost, wanting, *_: draws.append((lost, wanting)) or 0.0)
    turns.hold_off(WEB, 1, OPTIONS)
    turns.falls[WEB] = 6  # six of its disruptions taken since: two drains left to want it
    turns.hold_off(WEB, 1, OPTIONS)
    assert draws[0][1] > draws[1][1]


def test_the_first_waves_count_is_taken_again_once_and_only_widens() -> None:
    clock = FakeClock()
    turns = BudgetTurns(clock)
    turns.first_wave(2, {WEB: 6}, {WEB})
    assert not turns.recount_due(WEB)  # a moment after the first count: not yet
    clock.advance(budget_turns.RECOUNT_AFTER_SECONDS)
    assert turns.recount_due(WEB) and not turns.recount_due(("shop", "other"))
    turns.recounted(9)
    assert turns.contenders == {WEB: 6} and turns.recount is None  # at most its pods; once
    assert not turns.recount_due(WEB)
    narrow = BudgetTurns(clock)
    narrow.first_wave(4, {WEB: 6}, {WEB})
    narrow.recounted(3)
    assert narrow.contenders == {WEB: 4}  # drains that ended are taken off by the falls seen, not by a recount


def test_what_a_wait_on_budgets_saw_serves_the_pass_right_after_it_once() -> None:
    clock = FakeClock()
    watch = BudgetWatch(clock)
    watch.ended(Budgets({WEB: 1}, clock.mono(), {WEB: 1}, "7", rose_at=clock.mono()))
    assert watch.turn_came() and watch.rose_at == clock.mono() and watch.resume is not None
    assert watch.allowing() == {WEB: 1}
    assert watch.allowing() == {} and not watch.turn_came()  # used once: its evictions change the budget
    watch.ended(Budgets({WEB: 1}, clock.mono(), {WEB: 1}, "8"))
    clock.advance(BUDGETS_FRESH_SECONDS + 0.1)
    assert watch.allowing() == {}  # a pass long after the wait: the budget may have moved since
    watch.listed({WEB: 0}, "9")
    assert watch.resume is not None and watch.resume.rv == "9" and watch.resume.seen == {WEB: 0}


def test_a_held_pass_says_when_the_drains_own_clock_acts_as_an_epoch() -> None:
    clock = FakeClock(mono=100.0, wall=5_000.0)
    drain = DrainParts(NO_CLIENT, "n1", OPTIONS, clock=clock)
    rec = drain.pods.record("shop/a@1")
    rec.waiting_on, rec.force_at = [WEB], 160.0  # the deadline policy deletes it in a minute
    report = DrainReport(node="n1", remaining=["shop/a"], blocked=[BlockedPod("shop/a", ["web"], "429")])
    check = HoldCheck(linger=0, quick=True)
    assert check.ends(drain, report) and check.ended
    assert check.wake_at == 5_060.0

"""What a drain remembers of one pod: one record per pod identity, refusals forgotten apart from what was sent."""

from __future__ import annotations

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.report import HeldPod
from drain_orchestrator.engine.pod_record import PodRecord, PodRecords
from tests.unit.clock_support import FakeClock


def test_a_record_names_its_pod_and_a_blank_one_is_not_kept() -> None:
    pods = PodRecords(FakeClock())
    assert pods.known("ns/a@u1").blank and pods.by_ident == {}  # reading makes no record
    rec = pods.record("ns/a@u1")
    assert rec.key == "ns/a" and pods.record("ns/a@u1") is rec
    assert pods.record("ns/a@u2") is not rec  # a successor under the same name is another pod
    pods.tidy("ns/a@u2")
    assert list(pods.by_ident) == ["ns/a@u1"]


def test_forget_drops_the_refusals_but_keeps_what_was_sent() -> None:
    pods = PodRecords(FakeClock())
    rec = pods.record("ns/a@u1")
    rec.attempts, rec.not_before, rec.pdbs, rec.last_block = 3, 5.0, ["web"], "needs 2"
    rec.waiting_on, rec.force_at = [("ns", "web")], 9.0
    rec.last_hold = HeldPod("ns/a", "pdb", "needs 2", ["web"], 429)
    rec.sent, rec.expected_gone = True, 100.0
    pods.forget("ns/a@u1")
    assert pods.by_ident["ns/a@u1"] == PodRecord("ns/a@u1", sent=True, expected_gone=100.0)
    assert pods.going
    pods.gone(pods.by_ident["ns/a@u1"])
    assert pods.by_ident == {} and not pods.going


def test_a_pod_left_to_the_deadline_policy_is_parked_and_a_budget_wait_is_not_a_timer() -> None:
    waiting = PodRecord("ns/a@u", not_before=5.0, waiting_on=[("ns", "web")])
    assert waiting.timed is None and not waiting.parked
    assert PodRecord("ns/b@u", not_before=float("inf")).parked
    assert PodRecord("ns/c@u", not_before=7.0, force_at=7.0).parked
    assert not PodRecord("ns/d@u", not_before=3.0, force_at=7.0).parked
    pods = PodRecords(FakeClock())
    pods.record("ns/e@u").waiting_on = [("ns", "web")]
    pods.park("ns/e@u")  # several budgets select it: the eviction API never evicts it
    assert pods.known("ns/e@u").parked and pods.waited_budgets() == set()


def test_times_kept_are_on_the_drains_own_clock() -> None:
    clock = FakeClock(mono=100.0, wall=1_700_000_000.0)
    pods = PodRecords(clock)
    pods.sent("ns/a@u", grace=30)
    assert pods.known("ns/a@u").expected_gone == 130.0  # monotonic, not an epoch
    delay = pods.retry_later("ns/b@u", DrainOptions(retry_base=1.0, retry_cap=1.0))
    assert pods.known("ns/b@u").not_before == 100.0 + delay and 0.5 <= delay <= 1.0
    assert pods.next_action() == 100.0 + delay  # the first thing the drain's own clock acts on
    assert pods.announce_gone(present={"ns/b@u"}) == ["ns/a"]  # sent, and the LIST no longer shows it
    assert not pods.going

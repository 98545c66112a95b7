"""What a drain remembers of one pod: one record per pod identity, refusals forgotten apart from what was sent."""

from __future__ import annotations

from drain_orchestrator.drain.report import HeldPod
from drain_orchestrator.engine.pass_state import DrainState, forget
from drain_orchestrator.engine.pod_record import PodRecord


def test_a_record_names_its_pod_and_a_blank_one_is_not_kept() -> None:
    state = DrainState()
    assert state.known("ns/a@u1").blank and state.pods == {}  # reading makes no record
    rec = state.record("ns/a@u1")
    assert rec.key == "ns/a" and state.record("ns/a@u1") is rec
    assert state.record("ns/a@u2") is not rec  # a successor under the same name is another pod
    state.tidy("ns/a@u2")
    assert list(state.pods) == ["ns/a@u1"]


def test_forget_drops_the_refusals_but_keeps_what_was_sent() -> None:
    state = DrainState()
    rec = state.record("ns/a@u1")
    rec.attempts, rec.not_before, rec.pdbs, rec.last_block = 3, 5.0, ["web"], "needs 2"
    rec.waiting_on, rec.force_at = [("ns", "web")], 9.0
    rec.last_hold = HeldPod("ns/a", "pdb", "needs 2", ["web"], 429)
    rec.sent, rec.expected_gone = True, 100.0
    forget(state, "ns/a@u1")
    assert state.pods["ns/a@u1"] == PodRecord("ns/a@u1", sent=True, expected_gone=100.0)
    assert state.going
    state.pods["ns/a@u1"].sent = False
    state.pods["ns/a@u1"].expected_gone = None
    forget(state, "ns/a@u1")
    assert state.pods == {} and not state.going


def test_a_pod_left_to_the_deadline_policy_is_parked_and_a_budget_wait_is_not_a_timer() -> None:
    waiting = PodRecord("ns/a@u", not_before=5.0, waiting_on=[("ns", "web")])
    assert waiting.timed is None and not waiting.parked
    assert PodRecord("ns/b@u", not_before=float("inf")).parked
    assert PodRecord("ns/c@u", not_before=7.0, force_at=7.0).parked
    assert not PodRecord("ns/d@u", not_before=3.0, force_at=7.0).parked

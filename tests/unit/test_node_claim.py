"""The rules of one drain per node (drain_claim.py): who drains, who waits, to which deadline, and when a
silent holder is replaced."""

from __future__ import annotations

from drain_orchestrator.drain_claim import NodeClaim, Role, claim_ttl, look, renew, settle

TTL = 100.0


def test_the_first_look_takes_the_claim_the_next_wait_recording_their_deadlines() -> None:
    first = look(None, "a", deadline=5000.0, now=1000.0, ttl=TTL)
    assert first.role is Role.HOLDER and first.claim == NodeClaim("a", 1100.0, {"a": 5000.0}, since=1000.0)
    second = look(first.claim, "b", deadline=1120.0, now=1001.0, ttl=TTL)
    assert second.role is Role.WAITER and second.claim.holder == "a"
    assert second.claim.deadlines == {"a": 5000.0, "b": 1120.0} and second.claim.earliest == 1120.0
    # a replay of the holder's own look holds it still; a waiter's repeated look changes nothing
    assert look(second.claim, "a", 5000.0, 1002.0, TTL).role is Role.HOLDER
    assert look(second.claim, "b", 1120.0, 1003.0, TTL).claim == second.claim


def test_the_holder_renews_and_a_claim_not_renewed_by_its_expiry_is_taken_over() -> None:
    claim = look(look(None, "a", 5000.0, 1000.0, TTL).claim, "b", 3000.0, 1001.0, TTL).claim
    renewed = renew(claim, "a", now=1050.0, ttl=TTL)
    assert renewed is not None and renewed.expires == 1150.0
    assert look(renewed, "b", 3000.0, now=1149.0, ttl=TTL).role is Role.WAITER
    taken = look(renewed, "b", 3000.0, now=1150.0, ttl=TTL)
    assert (taken.role, taken.took_over, taken.claim.holder, taken.claim.expires) == (Role.HOLDER, "a", "b", 1250.0)
    assert taken.claim.deadlines == {"a": 5000.0, "b": 3000.0}  # the old holder's deadline still counts
    assert renew(taken.claim, "a", 1151.0, TTL) is None  # the late holder learns it lost the claim


def test_waiters_adopt_the_verdict_a_later_event_starts_a_new_drain() -> None:
    claim = look(look(None, "a", 5000.0, 1000.0, TTL).claim, "b", 3000.0, 1001.0, TTL).claim
    assert settle(claim, "b", "drained") is None  # only the holder settles
    done = settle(claim, "a", "drained")
    assert done is not None and settle(done, "a", "failed") is None  # settled once
    seen = look(done, "b", 3000.0, 1200.0, TTL)
    assert (seen.role, seen.claim.verdict) == (Role.SETTLED, "drained")
    later = look(done, "c", 9000.0, 1300.0, TTL)
    assert later.role is Role.HOLDER and later.claim == NodeClaim("c", 1400.0, {"c": 9000.0}, since=1300.0)


def test_the_claim_round_trips_and_a_damaged_annotation_is_no_claim() -> None:
    claim = NodeClaim("a", 1100.0, {"a": 5000.0, "b": 1120.0}, since=1000.0, verdict="drained")
    assert NodeClaim.from_json(claim.to_json()) == claim
    for raw in (None, "", "not json", "[]", '{"holder": "a"}', '{"holder": "a", "expires": "soon"}'):
        assert NodeClaim.from_json(raw) is None, raw
    assert claim_ttl(120, 120) == 360.0

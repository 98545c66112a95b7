"""Which ids a shared read's round asks EC2 for (shared_reads.next_round, pure): the holder's own first, then the
oldest wants, each once, up to DescribeInstances' 1,000; the first want left out says where the next round starts.
And which published facts a waiter believes (shared_reads.believable)."""

from __future__ import annotations

from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.shared_reads import ROUND_IDS, Published, believable, next_round


def test_the_holder_s_ids_come_first_and_every_id_is_asked_once() -> None:
    ids, left_out = next_round(["i-mine"], [(10, "i-a"), (11, "i-mine"), (12, "i-b"), (13, "i-a")])
    assert ids == ["i-mine", "i-a", "i-b"] and left_out is None


def test_a_round_stops_at_the_limit_and_names_when_the_first_want_left_out_was_left() -> None:
    wants = [(1000 + n, f"i-{n:04d}") for n in range(ROUND_IDS + 5)]
    ids, left_out = next_round(["i-mine"], wants)
    assert len(ids) == ROUND_IDS and ids[0] == "i-mine" and ids[-1] == f"i-{ROUND_IDS - 2:04d}"
    assert left_out == 1000 + ROUND_IDS - 1  # the next round's query starts before it: nobody waits a re-want


def test_an_event_naming_more_instances_than_a_round_still_asks_for_all_of_its_own() -> None:
    mine = [f"i-{n:05d}" for n in range(ROUND_IDS + 10)]
    ids, left_out = next_round(mine, [(5, "i-other")])
    assert ids == mine and left_out == 5


def test_a_waiter_believes_only_facts_read_since_it_asked_not_dated_ahead_and_about_its_instance() -> None:
    mine = InstanceFacts("i-mine", "running", None, None, {}, None)
    other = InstanceFacts("i-other", "shutting-down", None, None, {}, None)
    asked, latest = 1_000, 5_000
    assert believable("i-mine", Published(2_000, mine), asked, latest)
    assert believable("i-mine", Published(2_000, None), asked, latest)  # EC2 did not know it: also an answer
    assert not believable("i-mine", Published(999, mine), asked, latest)  # read before it asked
    assert not believable(
        "i-mine", Published(5_001, mine), asked, latest
    )  # dated ahead: written to answer later waiters
    assert not believable("i-mine", Published(2_000, other), asked, latest)  # another instance's facts under its key

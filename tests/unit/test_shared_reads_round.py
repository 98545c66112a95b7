"""Which ids a shared read's round asks EC2 for (shared_reads.next_round, pure): the holder's own first, then the
oldest wants, each once, up to DescribeInstances' 1,000; the first want left out says where the next round starts."""

from __future__ import annotations

from drain_orchestrator.shared_reads import ROUND_IDS, next_round


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

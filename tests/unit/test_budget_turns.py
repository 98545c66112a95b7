"""Each watched budget's turn (kube/pdb_watch.py Turns): drawn when the budget rises, dropped when it falls back,
and only the budgets whose turn has come are handed to the pass as allowing; the disruptions each budget gave are
counted as it falls, across waits."""

from __future__ import annotations

import time

from drain_orchestrator.kube.pdb_watch import Turns

A, B = ("ns", "a"), ("ns", "b")


def test_a_turn_is_drawn_at_the_rise_and_only_budgets_whose_turn_came_are_taken() -> None:
    draws = iter([0.0, 60.0])
    turns = Turns(lambda key: next(draws))
    turns.see(A, 1)  # its turn: now
    turns.see(B, 2)  # its turn: in a minute
    now = time.monotonic()
    assert turns.next is not None and turns.next <= now
    assert turns.taken(now, None).allowed == {A: 1, B: 0}  # B is not this drain's yet: nothing sent for it


def test_a_budget_falling_back_before_the_turn_drops_it_and_the_next_rise_draws_again() -> None:
    draws = iter([60.0, 0.0])
    turns = Turns(lambda key: next(draws))
    turns.see(A, 1)
    turns.see(A, 0)  # another drain took it first
    assert turns.next is None
    turns.see(A, 1)  # the next rise: a new draw
    assert turns.next is not None and turns.next <= time.monotonic()


def test_a_budget_still_allowing_keeps_its_turn() -> None:
    draws = iter([30.0, 0.0])
    turns = Turns(lambda key: next(draws))
    turns.see(A, 1)
    first = turns.next
    turns.see(A, 2)  # allowing more: the turn drawn at the rise stands
    assert turns.next == first


def test_each_budgets_falls_are_counted_from_the_first_status_seen_and_added_to_across_waits() -> None:
    falls: dict[tuple[str, str], int] = {}
    drawn: list[tuple[str, str]] = []

    def draw(key: tuple[str, str]) -> float:
        drawn.append(key)
        return 60.0

    turns = Turns(draw, falls)
    turns.see(A, 2)  # the first status seen: a baseline, not a fall
    turns.see(A, 1)  # one disruption taken
    turns.see(A, 3)  # a rise gives nothing
    turns.see(A, 0)  # three taken
    turns.see(B, 1)
    assert falls == {A: 4} and drawn == [A, B]  # the hold-off is drawn for the budget that rose
    later = Turns(draw, falls)  # the next wait reads on from the same counts
    later.see(B, 1)
    later.see(B, 0)
    assert falls == {A: 4, B: 1}

"""Each watched budget's turn (engine/budget_turns.py Turns): drawn when the budget rises, dropped when it falls back,
and only the budgets whose turn has come are handed to the pass as allowing; the disruptions each budget gave are
counted as it falls, across waits."""

from __future__ import annotations

import time

from drain_orchestrator.drain.turns import TurnLag
from drain_orchestrator.engine.budget_turns import Turns

A, B = ("ns", "a"), ("ns", "b")


def test_a_turn_is_drawn_at_the_rise_and_only_budgets_whose_turn_came_are_taken() -> None:
    draws = iter([0.0, 60.0])
    turns = Turns(lambda key, allowed: next(draws))
    turns.see(A, 1)  # its turn: now
    turns.see(B, 2)  # its turn: in a minute
    now = time.monotonic()
    assert turns.next is not None and turns.next <= now
    assert turns.due(now) == {A: 1, B: 0}  # B is not this drain's yet: nothing sent for it


def test_a_budget_falling_back_before_the_turn_drops_it_and_the_next_rise_draws_again() -> None:
    draws = iter([60.0, 0.0])
    turns = Turns(lambda key, allowed: next(draws))
    turns.see(A, 1)
    turns.see(A, 0)  # another drain took it first
    assert turns.next is None
    turns.see(A, 1)  # the next rise: a new draw
    assert turns.next is not None and turns.next <= time.monotonic()


def test_a_budget_still_allowing_keeps_its_turn_nearer_as_it_allows_more_and_further_as_it_allows_less() -> None:
    draws = iter([30.0, 0.0])
    turns = Turns(lambda key, allowed: next(draws))
    turns.see(A, 2)
    first = turns.next
    assert first is not None
    turns.see(A, 3)  # a slot holds twice as many turns: the time left halves, the turn is not drawn again
    nearer = turns.next
    assert nearer is not None and abs((nearer - time.monotonic()) - (first - time.monotonic()) / 2) < 0.5
    turns.see(A, 2)  # back: as far as drawn there
    assert turns.next is not None and abs(turns.next - first) < 0.5


def test_the_hold_off_is_drawn_with_what_the_budget_allows() -> None:
    seen: list[int] = []

    def draw(key: tuple[str, str], allowed: int) -> float:
        seen.append(allowed)
        return 10.0

    turns = Turns(draw)
    turns.see(A, 0)
    turns.see(A, 3)
    turns.see(B, 5)
    assert seen == [3, 5]


def test_each_budgets_falls_are_counted_from_the_first_status_seen_and_added_to_across_waits() -> None:
    falls: dict[tuple[str, str], int] = {}
    drawn: list[tuple[str, str]] = []

    def draw(key: tuple[str, str], allowed: int) -> float:
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


def test_a_turn_drawn_before_the_lag_was_measured_stays_where_it_was_drawn_when_the_budget_moves() -> None:
    lag = TurnLag()
    turns = Turns(lambda key, allowed: 30.0, None, lag)
    turns.see(A, 5)  # drawn one turn a slot: the configured slot is a guess, no level packs it
    drawn = turns.next
    lag.lag = 0.4  # the drain measures its lag meanwhile
    turns.see(A, 2)
    assert turns.next == drawn  # not pushed out by 4 / 1 as a turn drawn from the measured lag would be
    turns.see(A, 0)
    turns.see(A, 5)  # the next rise is drawn from the measured lag and moves with the level
    measured = turns.next
    assert measured is not None
    turns.see(A, 3)
    assert turns.next is not None and abs((turns.next - time.monotonic()) - (measured - time.monotonic()) * 2) < 0.5

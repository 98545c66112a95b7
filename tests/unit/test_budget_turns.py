"""Each watched budget's turn (kube/pdb_watch.py Turns): drawn when the budget rises, dropped when it falls back,
and only the budgets whose turn has come are handed to the pass as allowing."""

from __future__ import annotations

import time

from drain_orchestrator.kube.pdb_watch import Turns

A, B = ("ns", "a"), ("ns", "b")


def test_a_turn_is_drawn_at_the_rise_and_only_budgets_whose_turn_came_are_taken() -> None:
    draws = iter([0.0, 60.0])
    turns = Turns(lambda: next(draws))
    turns.see(A, 1)  # its turn: now
    turns.see(B, 2)  # its turn: in a minute
    now = time.monotonic()
    assert turns.next is not None and turns.next <= now
    assert turns.taken(now, None).allowed == {A: 1, B: 0}  # B is not this drain's yet: nothing sent for it


def test_a_budget_falling_back_before_the_turn_drops_it_and_the_next_rise_draws_again() -> None:
    draws = iter([60.0, 0.0])
    turns = Turns(lambda: next(draws))
    turns.see(A, 1)
    turns.see(A, 0)  # another drain took it first
    assert turns.next is None
    turns.see(A, 1)  # the next rise: a new draw
    assert turns.next is not None and turns.next <= time.monotonic()


def test_a_budget_still_allowing_keeps_its_turn() -> None:
    draws = iter([30.0, 0.0])
    turns = Turns(lambda: next(draws))
    turns.see(A, 1)
    first = turns.next
    turns.see(A, 2)  # allowing more: the turn drawn at the rise stands
    assert turns.next == first

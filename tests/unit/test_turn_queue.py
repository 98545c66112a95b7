"""When a storm's drain leaves its budgets' watch to wait for a far turn durably, and for how long (pure)."""

from __future__ import annotations

import pytest

from drain_orchestrator.drain.turn_queue import QUEUE_RETURN_SHARE, QUEUE_WATCHERS, queue_wait
from drain_orchestrator.engine.first_wave import budget_capacity

AFTER = 20.0
LEAVES = 0.99  # a draw that does not make this drain one of the watchers


def test_a_turn_further_than_the_threshold_is_waited_for_away_from_the_watch() -> None:
    # 20 drains want a budget that gave 1 disruption in the 10 s watched: 17 ahead of the watchers at 0.1/s
    assert queue_wait(20, 1, 10.0, 1, AFTER, LEAVES, 1.0) == pytest.approx(170.0)
    assert queue_wait(20, 1, 10.0, 1, AFTER, LEAVES, 0.0) == pytest.approx(170.0 * QUEUE_RETURN_SHARE)


def test_a_near_turn_is_waited_for_in_the_pass() -> None:
    assert queue_wait(QUEUE_WATCHERS, 1, 10.0, 1, AFTER, LEAVES, 0.5) is None  # no drain ahead of the watchers
    assert queue_wait(10, 5, 10.0, 1, AFTER, LEAVES, 0.5) is None  # 7 ahead at 0.5/s: 14 s
    assert queue_wait(10, 3, 10.0, 1, AFTER, LEAVES, 0.5) is not None  # 7 ahead at 0.3/s: 23 s


def test_a_few_drains_drawn_at_random_stay_so_the_budget_s_rises_are_taken() -> None:
    left = 12
    share = QUEUE_WATCHERS / left
    assert queue_wait(left, 1, 10.0, 1, AFTER, share - 0.01, 0.5) is None
    assert queue_wait(left, 1, 10.0, 1, AFTER, share, 0.5) is not None


def test_a_budget_that_gave_nothing_while_watched_is_held_not_queued() -> None:
    # the held waits take it, and they grow: queued waits would not, and would cost a pass each for its whole hold
    assert queue_wait(10, 0, 10.0, 1, AFTER, LEAVES, 1.0) is None
    assert queue_wait(10, 1, 0.0, 1, AFTER, LEAVES, 1.0) is None


def test_a_budget_that_allows_several_at_once_keeps_as_many_more_watchers() -> None:
    # 50 drains want a budget allowing 5 at once that gave 12 in 10 s: 35 ahead of its 15 watchers, 29 s
    assert queue_wait(50, 12, 10.0, 5, AFTER, LEAVES, 1.0) == pytest.approx(35 * 10.0 / 12)
    assert queue_wait(50, 12, 10.0, 5, AFTER, 15 / 50 - 0.01, 1.0) is None  # one of the 15 watchers
    assert queue_wait(18, 12, 10.0, 5, AFTER, LEAVES, 1.0) is None  # 3 ahead of them: 2.5 s


def test_a_budget_s_capacity_is_what_it_allows_with_every_pod_healthy() -> None:
    assert budget_capacity({"status": {"expectedPods": 50, "desiredHealthy": 45, "disruptionsAllowed": 0}}) == 5
    assert budget_capacity({"status": {"expectedPods": 1, "desiredHealthy": 1}}) == 1  # allows nothing: one turn
    assert budget_capacity({}) == 1

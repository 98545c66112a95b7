"""The turn-draws model (bench/turn_draws.py): a rise's first eviction and its refusals, and the wait read off
the sweep at a refusal rate."""

from __future__ import annotations

import random

import pytest
from bench import turn_draws


def test_drains_whose_turns_fall_within_the_lag_of_the_first_are_refused() -> None:
    rng = random.Random(0)
    first, refused = turn_draws.wave(5, lambda r: 0.0, window=1.0, lag=0.01, seen=0.0, rng=rng)
    assert (first, refused) == (0.0, 4)  # all at the rise: one evicts, four are refused


def test_turns_further_apart_than_the_lag_are_never_refused() -> None:
    turns = iter([0.0, 0.5, 0.25])
    first, refused = turn_draws.wave(3, lambda r: next(turns), window=1.0, lag=0.2, seen=0.0, rng=random.Random(0))
    assert (first, refused) == (0.0, 0)


def test_a_wider_window_trades_wait_for_fewer_refusals() -> None:
    points = turn_draws.curve(8, turn_draws.SHAPES["uniform (shipped)"], lag=0.07, seen=0.03, waves=300,
                              windows=(0.1, 1.0, 10.0))  # fmt: skip
    refused, waits = zip(*points, strict=True)
    assert refused[0] > refused[1] > refused[2]
    assert waits[0] < waits[1] < waits[2]


def test_the_wait_at_a_rate_is_interpolated_between_the_windows_that_straddle_it() -> None:
    points = [(0.4, 0.1), (0.2, 0.3), (0.0, 0.9)]
    assert turn_draws.wait_at(points, 0.3) == pytest.approx(0.2)
    assert turn_draws.wait_at(points, 0.1) == pytest.approx(0.6)
    assert turn_draws.wait_at(points, 0.5) is None  # no window refuses that often

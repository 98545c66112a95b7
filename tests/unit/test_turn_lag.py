"""The turn slot drawn from the lag a drain measures between its eviction and its watch showing the budget fall."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from drain_orchestrator.drain.turns import LAG_SLOTS, SAMPLE_MAX_SECONDS, TurnLag

WEB = ("shop", "web")
API = ("shop", "api")


def _timed(lag: TurnLag, key: tuple[str, str], sent: float, seen: float, before: int = 1, after: int = 0) -> None:
    lag.level(key, before)
    lag.sent(key, sent)
    lag.seen(key, after, seen)


def test_no_sample_keeps_the_configured_slot() -> None:
    assert TurnLag().slot(0.2, 10.0) == 0.2


def test_the_first_fall_after_an_eviction_is_its_lag() -> None:
    lag = TurnLag()
    _timed(lag, WEB, sent=100.0, seen=100.25)
    assert lag.lag == pytest.approx(0.25)
    assert lag.slot(0.2, 10.0) == pytest.approx(LAG_SLOTS * 0.25)


def test_a_fast_control_plane_keeps_the_floor() -> None:
    lag = TurnLag()
    _timed(lag, WEB, sent=100.0, seen=100.01)
    assert lag.slot(0.2, 10.0) == 0.2


def test_the_slot_is_capped() -> None:
    lag = TurnLag()
    _timed(lag, WEB, sent=100.0, seen=109.0)
    assert lag.slot(0.2, 5.0) == 5.0


def test_events_before_the_eviction_or_rises_are_not_its_answer() -> None:
    lag = TurnLag()
    lag.level(WEB, 1)
    lag.sent(WEB, 100.0)
    lag.seen(WEB, 0, 99.9)  # queued before the eviction was sent: another drain's
    lag.seen(WEB, 2, 100.1)  # a replacement became ready: a rise
    assert lag.lag is None
    lag.seen(WEB, 1, 100.3)
    assert lag.lag == pytest.approx(0.3)


def test_the_estimate_follows_a_slower_control_plane_without_jumping() -> None:
    lag = TurnLag()
    _timed(lag, WEB, sent=100.0, seen=100.1)
    _timed(lag, WEB, sent=110.0, seen=111.1)  # one slow answer moves the estimate part of the way
    assert 0.1 < (lag.lag or 0) < 1.0
    for t in range(120, 200, 10):
        _timed(lag, WEB, sent=float(t), seen=t + 1.0)
    assert lag.lag == pytest.approx(1.0, abs=0.05)
    assert lag.samples == 10


def test_a_fall_long_after_is_not_a_sample() -> None:
    lag = TurnLag()
    _timed(lag, WEB, sent=100.0, seen=100.0 + SAMPLE_MAX_SECONDS + 1)
    assert lag.lag is None


def test_the_first_eviction_of_several_is_the_one_timed() -> None:
    lag = TurnLag()
    lag.level(WEB, 2)
    lag.sent(WEB, 100.0)
    lag.sent(WEB, 100.5)
    lag.seen(WEB, 1, 100.6)
    assert lag.lag == pytest.approx(0.6)


def _another_budget_falls(lag: TurnLag) -> None:
    lag.level(API, 1)
    lag.level(WEB, 1)
    lag.sent(WEB, 100.0)
    lag.seen(API, 0, 100.1)


def _a_budget_never_seen_before_falls(lag: TurnLag) -> None:
    lag.sent(WEB, 100.0)
    lag.seen(WEB, 0, 100.2)  # the level it fell from is unknown


def _the_watch_started_over_before_the_fall(lag: TurnLag) -> None:
    lag.level(WEB, 1)
    lag.sent(WEB, 100.0)
    lag.restart()  # a LIST: evictions waiting for an answer are forgotten
    lag.level(WEB, 1)
    lag.seen(WEB, 0, 100.2)


@pytest.mark.parametrize(
    "events", [_another_budget_falls, _a_budget_never_seen_before_falls, _the_watch_started_over_before_the_fall]
)
def test_falls_that_are_not_the_evictions_answer_give_no_sample(events: Callable[[TurnLag], None]) -> None:
    lag = TurnLag()
    events(lag)
    assert lag.lag is None

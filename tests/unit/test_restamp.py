"""`--now`: a sample event replayed as if sent now keeps the distance between its time and its deadline."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from drain_orchestrator.events import Interruption, parse_event
from drain_orchestrator.restamp import RestampError, restamp
from testbed import samples

NOW = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def _parsed(raw: object) -> Interruption:
    event = parse_event(raw)
    assert isinstance(event, Interruption)
    return event


@pytest.mark.parametrize(
    "name", ["asg-terminate.json", "spot-interruption-terminate.json", "state-change-stopping.json"]
)
def test_event_time_becomes_now_and_deadline_keeps_its_offset(name: str) -> None:
    raw = samples.load(name)
    before = _parsed(raw)

    after = _parsed(restamp(raw, NOW))

    assert after.event_time == pytest.approx(NOW.timestamp())
    assert before.deadline is not None and after.deadline is not None
    assert after.deadline - after.event_time == pytest.approx(before.deadline - before.event_time)
    assert raw == samples.load(name)  # the input is left alone


def test_health_window_moves_with_the_event_time() -> None:
    raw = samples.load("health-scheduled-change.json")
    before = _parsed(raw)

    moved = restamp(raw, NOW)
    after = _parsed(moved)

    assert after.deadline is not None and before.deadline is not None
    assert after.deadline - after.event_time == pytest.approx(before.deadline - before.event_time)
    assert moved["detail"]["startTime"].endswith(" GMT")  # still the format AWS Health sends
    assert moved["detail"]["endTime"] == "Fri, 16 Jan 2026 11:04:05 GMT"  # 14 d 8 h after the event, as before


def test_an_event_without_a_usable_time_is_named() -> None:
    with pytest.raises(RestampError, match=r"^time: expected ISO 8601, got 'yesterday'"):
        restamp({"time": "yesterday"}, NOW)
    with pytest.raises(RestampError, match=r"^time: "):
        restamp({"detail": {}}, NOW)

"""Times for people: ISO 8601 UTC and seconds left, from the epoch floats the code computes with."""

from __future__ import annotations

from drain_orchestrator.timefmt import deadline_fields, iso_utc


def test_iso_utc_whole_seconds_and_milliseconds() -> None:
    assert iso_utc(1743293557.0) == "2025-03-30T00:12:37Z"
    assert iso_utc(1743293557.214) == "2025-03-30T00:12:37.214Z"
    assert iso_utc(0) == "1970-01-01T00:00:00Z"


def test_deadline_fields_keep_the_machine_value_beside_the_readable_one() -> None:
    assert deadline_fields(1743293557.214, now=1743293500.0) == {
        "deadline": "2025-03-30T00:12:37.214Z",
        "deadline_epoch": 1743293557.214,
        "seconds_left": 57,
    }


def test_seconds_left_is_negative_once_passed_and_never_rounded_up() -> None:
    assert deadline_fields(100.0, now=160.5)["seconds_left"] == -61
    assert deadline_fields(100.0, now=99.5)["seconds_left"] == 0


def test_no_deadline() -> None:
    assert deadline_fields(None, now=5.0) == {"deadline": None, "deadline_epoch": None, "seconds_left": None}

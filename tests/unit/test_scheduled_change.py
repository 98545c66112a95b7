"""The AWS Health lifecycle: statusCode, the window and lastUpdatedTime parsed; the newest update of a change wins
by its own time, whatever order the updates arrive in (scheduled_change.py); a closed change is never drained.
Pure."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from drain_orchestrator.decide import closed_change
from drain_orchestrator.events import MalformedEvent, parse_event
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.scheduled_change import ANN_CHANGES, MAX_RECORDS, ChangeRecord, recorded, standing
from testbed import samples

ARN = "arn:aws:health:us-east-1::event/EC2/X/X_1"


def _health(status: str | None, updated: str | None = "Fri, 14 Mar 2025 22:00:00 GMT") -> dict[str, Any]:
    raw = samples.load("health-scheduled-change.json")
    if status is None:
        del raw["detail"]["statusCode"]
    else:
        raw["detail"]["statusCode"] = status
    if updated is None:
        del raw["detail"]["lastUpdatedTime"]
    else:
        raw["detail"]["lastUpdatedTime"] = updated
    return raw


def test_the_status_the_window_and_the_update_time_are_parsed() -> None:
    event = parse_event(_health("open", "Sat, 15 Mar 2025 08:30:00 GMT"))
    assert isinstance(event, Interruption)
    assert event.change_status == "open"
    assert event.change_updated == 1742027400.0
    assert event.change_arn is not None and event.change_arn.startswith("arn:aws:health:")
    assert (event.window_start, event.window_end) == (1743199200.0, 1743228000.0)


def test_without_status_or_update_time_an_update_is_upcoming_at_the_events_time() -> None:
    event = parse_event(_health(None, None))
    assert isinstance(event, Interruption)
    assert (event.change_status, event.change_updated) == ("upcoming", event.event_time)


def test_an_unknown_status_is_refused_naming_the_field() -> None:
    with pytest.raises(MalformedEvent) as err:
        parse_event(_health("pending"))
    assert err.value.path == "detail.statusCode"


def test_a_closed_change_of_an_owned_instance_is_returned_never_drained() -> None:
    event = parse_event(_health("closed"))
    assert isinstance(event, Interruption)
    owned = Decision("i-0123456789abcdef0", True, "prod", Reason.OWNED_INSTANCE_TAG, "drain")
    assert closed_change(owned, event) == Decision("i-0123456789abcdef0", True, "prod", Reason.CHANGE_CLOSED, "return")
    stale = Decision("i-0123456789abcdef0", True, "prod", Reason.STALE_EVENT, "skip")
    assert closed_change(stale, event).action == "return"
    ignored = Decision("i-0123456789abcdef0", True, "prod", Reason.KIND_IGNORED, "skip")
    assert closed_change(ignored, event) == ignored
    theirs = Decision("i-0123456789abcdef0", False, None, Reason.OTHER_CLUSTER, "skip")
    assert closed_change(theirs, event) == theirs


UPDATES = [
    ChangeRecord(ARN, 100.0, "upcoming", 1000.0, 2000.0),
    ChangeRecord(ARN, 200.0, "upcoming", 5000.0, 6000.0),  # rescheduled
    ChangeRecord(ARN, 300.0, "closed", 5000.0, 6000.0),
]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_the_newest_update_wins_whatever_order_they_arrive_in(order: tuple[int, ...]) -> None:
    annotations: dict[str, str] = {}
    for i in order:
        value, _ = recorded(annotations, UPDATES[i])
        if value is not None:
            annotations[ANN_CHANGES] = value
    _, newest = recorded(annotations, UPDATES[0])
    assert newest == UPDATES[2]
    assert [standing(newest, u) for u in UPDATES] == ["closed", "closed", "closed"]


def test_a_rescheduled_window_supersedes_the_old_one() -> None:
    value, _ = recorded({}, UPDATES[1])
    assert value is not None
    _, newest = recorded({ANN_CHANGES: value}, UPDATES[0])
    assert standing(newest, UPDATES[0]) == "superseded"
    assert standing(newest, UPDATES[1]) == "current"


def test_a_closed_update_wins_a_tie_and_the_records_stay_few() -> None:
    tie = ChangeRecord(ARN, 100.0, "closed")
    assert tie.newer_than(UPDATES[0]) and not UPDATES[0].newer_than(tie)
    annotations: dict[str, str] = {}
    for n in range(MAX_RECORDS + 5):
        value, _ = recorded(annotations, ChangeRecord(f"{ARN}-{n}", float(n), "upcoming"))
        assert value is not None
        annotations[ANN_CHANGES] = value
    _, oldest = recorded(annotations, ChangeRecord(f"{ARN}-0", 0.0, "upcoming"))
    assert oldest.arn == f"{ARN}-0"  # dropped, so recorded again as new


def test_an_unreadable_record_decides_nothing() -> None:
    value, newest = recorded({ANN_CHANGES: "not json"}, UPDATES[0])
    assert value is not None and newest == UPDATES[0]

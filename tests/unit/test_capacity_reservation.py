"""The interruptible capacity reservation's warning: parsed as its own kind, its deadline, its action (pure)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from drain_orchestrator import deadlines
from drain_orchestrator.events import Interruption, MalformedEvent, parse_event
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.ownership import Reason, decide
from drain_orchestrator.restamp import RestampError, restamp
from drain_orchestrator.settings import Settings, SettingsError
from drain_orchestrator.workflow_settings import WorkflowSettings
from testbed import samples

SAMPLE = "capacity-reservation-interruption.json"
IID = samples.SAMPLE_INSTANCE
WS = WorkflowSettings.from_env({})
OWNED = InstanceFacts(IID, "running", "ip-10-0-1-23.ec2.internal", "us-east-1a", {"eks:cluster-name": "prod"}, None)


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _raw(**detail: Any) -> dict[str, Any]:
    raw = copy.deepcopy(samples.load(SAMPLE))
    for key, value in detail.items():
        name = key.replace("_", "-")
        if value is None:
            del raw["detail"][name]
        else:
            raw["detail"][name] = value
    return raw


def _parsed(raw: object) -> Interruption:
    event = parse_event(raw)
    assert isinstance(event, Interruption), event
    return event


def test_the_warning_is_its_own_kind_with_the_termination_time_as_deadline() -> None:
    event = _parsed(samples.load(SAMPLE))
    assert event.kind == "capacity-reservation-interruption"
    assert event.detail_type == "EC2 Capacity Reservation Instance Interruption Warning"
    assert event.instance_ids == (IID,)
    assert event.instance_action == "terminate"
    assert event.event_time == _epoch("2025-03-28T10:00:00")
    assert event.deadline == _epoch("2025-03-28T10:02:00")
    assert deadlines.drain_deadline(event, WS) == _epoch("2025-03-28T10:02:00")


def test_the_termination_time_wins_over_the_usual_two_minutes() -> None:
    event = _parsed(_raw(instance_termination_time="2025-03-28T10:00:45Z"))
    assert deadlines.drain_deadline(event, WS) == _epoch("2025-03-28T10:00:45")
    assert deadlines.decide_deadline(event, WS) == _epoch("2025-03-28T10:00:45")


def test_without_a_termination_time_the_deadline_is_two_minutes_after_the_event() -> None:
    event = _parsed(_raw(instance_termination_time=None))
    assert event.deadline is None
    deadline = deadlines.drain_deadline(event, WS)
    assert deadline == event.event_time + deadlines.CAPACITY_RESERVATION_NOTICE_SECONDS == event.event_time + 120
    # not the rebalance budget that other events without a deadline get
    assert deadline != event.event_time + WS.deadline_rebalance


def test_an_undocumented_instance_action_is_kept_clipped_not_refused() -> None:
    assert _parsed(_raw(instance_action=None)).instance_action is None
    long = _parsed(_raw(instance_action="stop" * 100)).instance_action
    assert long is not None and long.startswith("stopstop") and long.endswith("(400 chars)")


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"instance_termination_time": "in two minutes"}, "detail.instance-termination-time"),
        ({"instance_id": None}, "detail.instance-id"),
        ({"instance_id": "i-NOTANID"}, "detail.instance-id"),
        ({"instance_action": 7}, "detail.instance-action"),
    ],
)
def test_malformed_warnings_name_the_field_path(change: dict[str, Any], path: str) -> None:
    with pytest.raises(MalformedEvent) as caught:
        parse_event(_raw(**change))
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")


def test_the_warning_from_another_source_is_malformed() -> None:
    raw = _raw()
    raw["source"] = "aws.health"
    with pytest.raises(MalformedEvent, match=r"^source: "):
        parse_event(raw)


@pytest.mark.parametrize(
    ("env", "action", "reason"),
    [
        ({}, "drain", Reason.OWNED_INSTANCE_TAG),
        ({"ACTION_CAPACITY_RESERVATION_INTERRUPTION": "Cordon"}, "cordon", Reason.OWNED_INSTANCE_TAG),
        ({"ACTION_CAPACITY_RESERVATION_INTERRUPTION": "ignore"}, "skip", Reason.KIND_IGNORED),
        # its own setting: the Spot one does not apply to it
        ({"ACTION_SPOT_INTERRUPTION": "ignore"}, "drain", Reason.OWNED_INSTANCE_TAG),
    ],
)
def test_owned_action_follows_its_own_setting(env: dict[str, str], action: str, reason: Reason) -> None:
    settings = Settings.from_env({"CLUSTER_NAMES": "prod", **env})
    decision = decide(IID, OWNED, settings, _parsed(samples.load(SAMPLE)))
    assert (decision.owned, decision.cluster, decision.action, decision.reason) == (True, "prod", action, reason)


def test_a_bad_action_names_the_variable() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"CLUSTER_NAMES": "prod", "ACTION_CAPACITY_RESERVATION_INTERRUPTION": "evict"})
    assert caught.value.variable == "ACTION_CAPACITY_RESERVATION_INTERRUPTION"
    assert (
        str(caught.value) == "ACTION_CAPACITY_RESERVATION_INTERRUPTION: 'evict': expected one of drain, cordon, ignore"
    )


def test_replayed_now_the_termination_time_keeps_its_distance() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    moved = restamp(samples.load(SAMPLE), now)
    assert moved["detail"]["instance-termination-time"] == "2026-01-02T03:06:05.000Z"
    event = _parsed(moved)
    assert deadlines.drain_deadline(event, WS) == now.timestamp() + 120


def test_replaying_a_bad_termination_time_names_it() -> None:
    with pytest.raises(RestampError, match=r"^detail\.instance-termination-time: expected ISO 8601, got 'soon'"):
        restamp(_raw(instance_termination_time="soon"), datetime.now(UTC))

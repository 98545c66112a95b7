"""Capacity Blocks: both events parsed as their own kinds (a reservation, no instance), the deadline at end - 30 min,
the Delivered kind's start at end - 30 min - CAPACITY_BLOCK_LEAD_SECONDS, what an old event means, the reservation
mapped to its instances before the decision, the settings (pure)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from drain_orchestrator import corroborate, deadlines
from drain_orchestrator.decide import decide_event, with_reservation_instances
from drain_orchestrator.events import Interruption, MalformedEvent, parse_event
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.kinds import KINDS, DeadlineRule
from drain_orchestrator.ownership import Reason
from drain_orchestrator.restamp import restamp
from drain_orchestrator.settings import Settings, SettingsError
from drain_orchestrator.workflow_settings import WorkflowSettings
from testbed import samples

DELIVERED = "capacity-block-delivered.json"
WARNING = "capacity-block-expiration-warning.json"
RESERVATION = "cr-0123456789abcdef0"
WS = WorkflowSettings.from_env({})
SETTINGS = Settings.from_env({"CLUSTER_NAMES": "prod"})


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


END = _epoch("2025-03-28T11:00:00")


def _parsed(name: str, **detail: Any) -> Interruption:
    raw = copy.deepcopy(samples.load(name))
    raw["detail"].update({k.replace("_", "-"): v for k, v in detail.items()})
    event = parse_event(raw)
    assert isinstance(event, Interruption), event
    return event


def _facts(iid: str, state: str = "running", cluster: str = "prod", **tags: str) -> InstanceFacts:
    return InstanceFacts(
        iid, state, f"ip-{iid}.ec2.internal", "us-east-1a", {"eks:cluster-name": cluster, **tags}, None
    )


class Reservation:
    """What EC2 says: the instances of each reservation and their facts."""

    def __init__(self, members: dict[str, list[InstanceFacts]]) -> None:
        self.members = members
        self.asked: list[str] = []

    def reservation_instances(self, reservation_id: str) -> list[str]:
        self.asked.append(reservation_id)
        return [f.instance_id for f in self.members.get(reservation_id, [])]

    def describe_instances(self, instance_ids: Sequence[str]) -> dict[str, InstanceFacts | None]:
        known = {f.instance_id: f for group in self.members.values() for f in group}
        return {i: known.get(i) for i in instance_ids}

    def asg_tags(self, asg_name: str) -> dict[str, str]:
        return {}

    def group_memberships(self, instance_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        return {}


@pytest.mark.parametrize(
    ("name", "kind", "detail_type"),
    [
        (DELIVERED, "capacity-block-delivered", "Capacity Block Delivered"),
        (WARNING, "capacity-block-expiring", "Capacity Block Expiration Warning"),
    ],
)
def test_each_event_is_its_own_kind_naming_the_reservation_and_no_instance(
    name: str, kind: str, detail_type: str
) -> None:
    event = _parsed(name)
    assert (event.kind, event.detail_type) == (kind, detail_type)
    assert event.instance_ids == ()
    assert event.capacity_reservation_id == RESERVATION
    assert event.block_end == END
    assert Interruption.from_dict(event.to_dict()) == event  # checkpointed and rebuilt on every replay
    assert KINDS[event.kind].deadline is DeadlineRule.BLOCK_END


def test_the_deadline_is_when_ec2_starts_terminating_the_instances() -> None:
    for name in (DELIVERED, WARNING):
        assert deadlines.drain_deadline(_parsed(name), WS) == END - 1800


def test_the_warning_drains_at_once_and_the_delivered_block_at_its_lead_before_the_deadline() -> None:
    assert deadlines.drain_start(_parsed(WARNING), WS) is None
    assert deadlines.drain_start(_parsed(DELIVERED), WS) == END - 1800 - 1800
    short = WorkflowSettings.from_env({"CAPACITY_BLOCK_LEAD_SECONDS": "60"})
    assert deadlines.drain_start(_parsed(DELIVERED), short) == END - 1800 - 60
    none = WorkflowSettings.from_env({"CAPACITY_BLOCK_LEAD_SECONDS": "0"})
    assert deadlines.drain_start(_parsed(DELIVERED), none) == END - 1800


def test_the_delivered_drains_clock_starts_at_its_start_not_at_the_event() -> None:
    event = _parsed(DELIVERED)  # sent a week before the end
    clock = deadlines.drain_clock(event, WS, first_look=event.event_time, action=None)
    assert clock.deadline == END - 1800
    assert clock.respect_until == END - 3600 + WS.min_drain_seconds
    late = deadlines.drain_clock(event, WS, first_look=END - 1900, action=None)  # looked after its start
    assert late.respect_until == END - 1900 + WS.min_drain_seconds


def test_a_warning_whose_ten_minutes_are_gone_still_gets_the_respectful_minimum() -> None:
    event = _parsed(WARNING)
    clock = deadlines.drain_clock(event, WS, first_look=END - 1790, action=None)
    assert clock.deadline == END - 1790 + WS.min_drain_seconds == clock.respect_until


def test_reading_the_instances_is_retried_until_the_deadline_counting_from_the_drains_start() -> None:
    delivered = _parsed(DELIVERED)
    # a week after the event: the hour of retries counts from the drain's start, bounded by the deadline
    assert deadlines.decide_deadline(delivered, WS) == END - 1800
    long_lead = WorkflowSettings.from_env({"CAPACITY_BLOCK_LEAD_SECONDS": "7200"})
    assert deadlines.decide_deadline(delivered, long_lead) == END - 1800 - 7200 + deadlines.DECIDE_RETRY_MAX_SECONDS
    assert deadlines.decide_deadline(_parsed(WARNING), WS) == END - 1800


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("capacity-reservation-id", "i-0123456789abcdef0", "detail.capacity-reservation-id"),
        ("capacity-reservation-id", "cr-0123456789abcdef0\n", "detail.capacity-reservation-id"),
        ("end-date", "next tuesday", "detail.end-date"),
        ("end-date", None, "detail.end-date"),
    ],
)
def test_a_malformed_block_event_names_its_field(field: str, value: object, path: str) -> None:
    raw = copy.deepcopy(samples.load(WARNING))
    raw["detail"][field] = value
    if value is None:
        del raw["detail"][field]
    with pytest.raises(MalformedEvent) as caught:
        parse_event(raw)
    assert caught.value.path == path


def test_now_moves_the_end_date_with_the_events_time() -> None:
    raw = restamp(samples.load(WARNING), datetime(2026, 1, 1, 0, 0, tzinfo=UTC))
    event = parse_event(raw)
    assert isinstance(event, Interruption)
    assert event.block_end is not None and event.block_end - event.event_time == 40 * 60


def test_the_reservation_is_mapped_to_the_instances_ec2_lists_in_it_and_each_decided_as_usual() -> None:
    ours, theirs, karpenter = (
        _facts("i-0aaa0000000000001"),
        _facts("i-0bbb0000000000002", cluster="green"),
        _facts("i-0ccc0000000000003", **{"karpenter.sh/nodepool": "gpu"}),
    )
    ec2 = Reservation({RESERVATION: [ours, theirs, karpenter], "cr-0fffffffffffffff0": [_facts("i-0ddd00000000004")]})
    event = with_reservation_instances(_parsed(WARNING), ec2)
    assert ec2.asked == [RESERVATION]
    assert event.instance_ids == (ours.instance_id, theirs.instance_id, karpenter.instance_id)
    decided = decide_event(event, SETTINGS, ec2, now=END - 2400, ws=WS)
    assert [(a.decision.reason, a.decision.action) for a in decided] == [
        (Reason.OWNED_INSTANCE_TAG, "drain"),
        (Reason.OTHER_CLUSTER, "skip"),
        (Reason.MANAGED_BY_KARPENTER, "skip"),
    ]
    other = parse_event(samples.ec2_event("spot-interruption-terminate.json", instance_id=ours.instance_id))
    assert isinstance(other, Interruption) and with_reservation_instances(other, ec2) == other  # not a block's


def test_an_old_block_event_is_stale_for_a_running_instance_and_believed_for_a_terminated_one() -> None:
    event = with_reservation_instances(_parsed(DELIVERED), Reservation({RESERVATION: [_facts("i-0aaa0000000000001")]}))
    moment = END - 1800
    running, gone = _facts("i-0aaa0000000000001"), _facts("i-0aaa0000000000001", state="terminated")
    assert corroborate.contradiction(running, event, moment + 60, WS) is None
    assert corroborate.contradiction(running, event, moment + 121, WS) is Reason.STALE_EVENT
    assert corroborate.contradiction(gone, event, moment + 3600, WS) is None
    age = corroborate.age_effect(event, moment + 121, WS)
    assert age["stale_if_running"] is True and "end-date less 30 minutes" in str(age["freshness"])


def test_one_action_setting_covers_both_kinds() -> None:
    assert KINDS["capacity-block-delivered"].action_variable == KINDS["capacity-block-expiring"].action_variable
    assert SETTINGS.action_capacity_block == "drain"
    facts = _facts("i-0aaa0000000000001")
    ec2 = Reservation({RESERVATION: [facts]})
    for value, action, reason in (
        ("cordon", "cordon", Reason.OWNED_INSTANCE_TAG),
        ("ignore", "skip", Reason.KIND_IGNORED),
    ):
        settings = Settings.from_env({"CLUSTER_NAMES": "prod", "ACTION_CAPACITY_BLOCK": value})
        for name in (DELIVERED, WARNING):
            event = with_reservation_instances(_parsed(name), ec2)
            (decided,) = decide_event(event, settings, ec2, now=END - 2400, ws=WS)
            assert (decided.decision.action, decided.decision.reason) == (action, reason)


def test_bad_settings_name_their_variable() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"CLUSTER_NAMES": "prod", "ACTION_CAPACITY_BLOCK": "evict"})
    assert str(caught.value) == "ACTION_CAPACITY_BLOCK: 'evict': expected one of drain, cordon, ignore"
    for bad in ("-1", "604801", "soon"):
        with pytest.raises(SettingsError) as lead:
            WorkflowSettings.from_env({"CAPACITY_BLOCK_LEAD_SECONDS": bad})
        assert lead.value.variable == "CAPACITY_BLOCK_LEAD_SECONDS"

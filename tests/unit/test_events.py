from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest

from drain_orchestrator.events import (
    Ignored,
    Interruption,
    LifecycleRef,
    MalformedEvent,
    parse_event,
)
from testbed import samples


def _parse(name: str) -> Interruption:
    result = parse_event(samples.load(name))
    assert isinstance(result, Interruption), result
    return result


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_asg_terminate_carries_the_lifecycle_reference_and_an_upper_bound_deadline() -> None:
    event = _parse("asg-terminate.json")
    assert event.kind == "asg-terminate"
    assert event.instance_ids == (samples.SAMPLE_INSTANCE,)
    assert event.lifecycle == LifecycleRef(
        asg_name="prod-nodes",
        hook_name="drain",
        token="87654321-4321-4321-4321-210987654321",
        transition="autoscaling:EC2_INSTANCE_TERMINATING",
    )
    assert event.event_time == _epoch("2025-03-28T00:12:37.214")
    assert event.deadline == event.event_time + 48 * 3600
    assert event.lifecycle is not None and not event.lifecycle.to_warm_pool


def test_asg_terminate_back_to_warm_pool_keeps_origin_and_destination() -> None:
    event = _parse("asg-terminate-warm-pool.json")
    assert event.lifecycle is not None
    assert (event.lifecycle.origin, event.lifecycle.destination) == ("AutoScalingGroup", "WarmPool")
    assert event.lifecycle.to_warm_pool


def test_asg_launch() -> None:
    event = _parse("asg-launch.json")
    assert event.kind == "asg-launch"
    assert event.lifecycle is not None
    assert event.lifecycle.transition == "autoscaling:EC2_INSTANCE_LAUNCHING"
    assert event.lifecycle.destination == "AutoScalingGroup"


@pytest.mark.parametrize(("action", "warning"), [("terminate", 120), ("stop", 120), ("hibernate", 0)])
def test_spot_interruption_deadline_is_two_minutes_after_the_warning(action: str, warning: int) -> None:
    event = _parse(f"spot-interruption-{action}.json")
    assert event.kind == "spot-interruption"
    assert event.instance_action == action
    assert event.deadline == _epoch("2025-03-28T10:00:00") + warning


def test_rebalance_has_no_deadline() -> None:
    event = _parse("rebalance-recommendation.json")
    assert (event.kind, event.deadline, event.instance_ids) == ("rebalance", None, (samples.SAMPLE_INSTANCE,))


@pytest.mark.parametrize("state", ["stopping", "stopped", "shutting-down", "terminated"])
def test_state_changes_that_take_a_node_away(state: str) -> None:
    event = _parse(f"state-change-{state}.json")
    assert (event.kind, event.state) == ("state-change", state)
    assert event.deadline is not None and event.deadline > event.event_time


def test_running_state_is_ignored_with_its_own_reason() -> None:
    result = parse_event(samples.load("state-change-running-ignored.json"))
    assert isinstance(result, Ignored)
    assert result.reason == "state-not-draining"
    assert result.instance_ids == (samples.SAMPLE_INSTANCE,)


def test_state_change_without_version_like_the_docs_sample_is_accepted() -> None:
    raw = samples.load("state-change-stopping.json")
    del raw["version"]
    assert isinstance(parse_event(raw), Interruption)


def test_health_scheduled_change_lists_every_affected_instance_and_the_window() -> None:
    event = _parse("health-scheduled-change.json")
    assert event.kind == "scheduled-change"
    assert event.instance_ids == ("i-0123456789abcdef0", "i-0fedcba9876543210", "i-0aaaabbbbccccdddd")
    assert event.window_start == _epoch("2025-03-28T22:00:00")
    assert event.window_end == _epoch("2025-03-29T06:00:00")
    assert event.deadline == event.window_start
    assert event.event_type_code == "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"


def test_health_entities_that_are_not_instances_are_dropped_and_duplicates_merged() -> None:
    raw = samples.health_event(["i-0aaaabbbbccccdddd", "vol-0123456789abcdef0", "i-0aaaabbbbccccdddd"])
    event = parse_event(raw)
    assert isinstance(event, Interruption)
    assert event.instance_ids == ("i-0aaaabbbbccccdddd",)
    only_volumes = samples.health_event(["vol-0123456789abcdef0"])
    ignored = parse_event(only_volumes)
    assert isinstance(ignored, Ignored) and ignored.reason == "no-instances"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("unsupported-ebs-snapshot.json", "unsupported"),
        ("unsupported-health-issue.json", "unsupported"),
        ("unsupported-asg-test-notification.json", "test-notification"),
    ],
)
def test_unsupported_events_are_ignored_not_errors(name: str, reason: str) -> None:
    result = parse_event(samples.load(name))
    assert isinstance(result, Ignored)
    assert result.reason == reason


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("malformed-asg-terminate-missing-instance.json", "detail.EC2InstanceId"),
        ("malformed-spot-bad-time.json", "time"),
        ("malformed-state-change-bad-instance-id.json", "detail.instance-id"),
    ],
)
def test_malformed_events_name_the_field_path(name: str, path: str) -> None:
    with pytest.raises(MalformedEvent) as caught:
        parse_event(samples.load(name))
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")


def test_missing_instance_id_is_reported_by_its_field_path() -> None:
    with pytest.raises(MalformedEvent, match=r"^detail\.EC2InstanceId: field required$"):
        parse_event(samples.load("malformed-asg-terminate-missing-instance.json"))


def test_lifecycle_event_from_the_wrong_source_or_transition_is_malformed() -> None:
    raw = samples.load("asg-terminate.json")
    wrong_source = copy.deepcopy(raw)
    wrong_source["source"] = "aws.ec2"
    with pytest.raises(MalformedEvent, match=r"^source: "):
        parse_event(wrong_source)
    wrong_transition = copy.deepcopy(raw)
    wrong_transition["detail"]["LifecycleTransition"] = "autoscaling:EC2_INSTANCE_LAUNCHING"
    with pytest.raises(MalformedEvent, match=r"^detail\.LifecycleTransition: "):
        parse_event(wrong_transition)


def test_lifecycle_token_must_be_36_characters_but_may_be_absent() -> None:
    raw = samples.load("asg-terminate.json")
    raw["detail"]["LifecycleActionToken"] = "short"
    with pytest.raises(MalformedEvent, match=r"^detail\.LifecycleActionToken: "):
        parse_event(raw)
    del raw["detail"]["LifecycleActionToken"]
    event = parse_event(raw)
    assert isinstance(event, Interruption) and event.lifecycle is not None and event.lifecycle.token is None


@pytest.mark.parametrize("raw", [None, [], "text", 3])
def test_non_objects_are_malformed(raw: object) -> None:
    with pytest.raises(MalformedEvent, match=r"^<event>: "):
        parse_event(raw)


def test_missing_detail_type_is_malformed() -> None:
    raw = samples.load("rebalance-recommendation.json")
    del raw["detail-type"]
    with pytest.raises(MalformedEvent, match=r"^detail-type: field required$"):
        parse_event(raw)


@pytest.mark.parametrize("name", [n for n in samples.names() if not n.startswith(("malformed-", "unsupported-"))])
def test_interruptions_round_trip_through_json(name: str) -> None:
    result = parse_event(samples.load(name))
    if isinstance(result, Ignored):
        return
    assert Interruption.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_every_sample_is_covered_by_the_readme() -> None:
    readme = (samples.EVENTS_DIR / "README.md").read_text()
    missing = [n for n in samples.names() if f"`{n}`" not in readme]
    assert missing == []


def test_an_instance_id_with_a_trailing_newline_is_not_an_instance_id() -> None:
    iid = samples.SAMPLE_INSTANCE
    event = parse_event(samples.health_event([f"{iid}\n", iid]))
    assert isinstance(event, Interruption) and event.instance_ids == (iid,)
    spot = samples.ec2_event("spot-interruption-terminate.json", instance_id=f"{iid}\n")
    with pytest.raises(MalformedEvent) as err:
        parse_event(spot)
    assert err.value.path == "detail.instance-id"


def test_events_nested_deeper_than_any_aws_event_are_rejected_without_recursing() -> None:
    deep: list[object] = []
    for _ in range(100_000):  # far beyond Python's recursion limit
        deep = [deep]
    raw = {**samples.load("spot-interruption-terminate.json"), "resources": deep}
    with pytest.raises(MalformedEvent) as err:
        parse_event(raw)
    assert (err.value.path, err.value.problem) == ("<event>", "nested deeper than 32 levels; no AWS event is")


def test_events_over_eventbridge_size_limit_are_rejected_naming_it() -> None:
    raw = {**samples.load("spot-interruption-terminate.json"), "detail-type": "x" * 5_000_000}
    with pytest.raises(MalformedEvent) as err:
        parse_event(raw)
    assert "over EventBridge's event size limit of 262144 bytes" in str(err.value)
    assert len(str(err.value)) < 200


def test_long_strings_are_clipped_where_they_are_echoed() -> None:
    raw = {**samples.load("spot-interruption-terminate.json"), "detail-type": "y" * 200_000, "id": "z" * 100}
    ignored = parse_event(raw)
    assert isinstance(ignored, Ignored)
    assert ignored.detail_type == "y" * 64 + "...(200000 chars)"
    assert ignored.message == f"detail-type {'y' * 64 + '...(200000 chars)'!r} is not handled"
    assert ignored.event_id == "z" * 64 + "...(100 chars)"
    bad_time = samples.health_event([samples.SAMPLE_INSTANCE])
    bad_time["detail"]["startTime"] = "Mon, " + "9" * 10_000
    with pytest.raises(MalformedEvent) as err:
        parse_event(bad_time)
    assert err.value.path == "detail.startTime" and len(err.value.problem) < 300

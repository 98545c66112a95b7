"""decide_event's call discipline with an in-memory facts source (the real adapters are tested over HTTP)."""

from __future__ import annotations

from collections.abc import Sequence

from drain_orchestrator.decide import Assessment, decide_event
from drain_orchestrator.events import Interruption, parse_event
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.ownership import Reason
from drain_orchestrator.settings import Settings
from drain_orchestrator.workflow_settings import WorkflowSettings
from testbed import samples

WS = WorkflowSettings()
A, B, C, D = "i-000000000000000a1", "i-000000000000000b2", "i-000000000000000c3", "i-000000000000000d4"


class Facts:
    def __init__(self, instances: dict[str, InstanceFacts], asgs: dict[str, dict[str, str]]) -> None:
        self.instances, self.asgs = instances, asgs
        self.describe_calls: list[list[str]] = []
        self.asg_calls: list[str] = []

    def describe_instances(self, instance_ids: Sequence[str]) -> dict[str, InstanceFacts | None]:
        self.describe_calls.append(list(instance_ids))
        return {i: self.instances.get(i) for i in instance_ids}

    def asg_tags(self, asg_name: str) -> dict[str, str]:
        self.asg_calls.append(asg_name)
        return self.asgs[asg_name]


def _facts(iid: str, tags: dict[str, str], asg: str | None) -> InstanceFacts:
    return InstanceFacts(iid, "running", f"ip-{iid}.ec2.internal", "us-east-1a", tags, asg)


def test_one_describe_for_all_instances_and_asg_tags_once_per_group_only_when_needed() -> None:
    source = Facts(
        {
            A: _facts(A, {"eks:cluster-name": "blue"}, "blue-nodes"),  # instance tags decide
            B: _facts(B, {}, "blue-nodes"),  # needs the ASG
            C: _facts(C, {}, "blue-nodes"),  # same ASG: no second call
        },
        {"blue-nodes": {"kubernetes.io/cluster/blue": "owned"}},
    )
    event = parse_event(samples.health_event([A, B, C, D]))
    assert isinstance(event, Interruption)

    result = decide_event(event, Settings.from_env({"CLUSTER_NAMES": "blue"}), source, now=event.event_time, ws=WS)

    assert source.describe_calls == [[A, B, C, D]]
    assert source.asg_calls == ["blue-nodes"]
    assert [a.decision.reason for a in result] == [
        Reason.OWNED_INSTANCE_TAG,
        Reason.OWNED_ASG_TAG,
        Reason.OWNED_ASG_TAG,
        Reason.UNKNOWN_INSTANCE,
    ]
    assert result[0].facts is not None and result[0].facts.asg_tags is None  # never fetched for A
    assert [Assessment.from_dict(a.to_dict()) for a in result] == result


class LifecycleFacts(Facts):
    def __init__(self, instances: dict[str, InstanceFacts], groups: dict[str, tuple[str, str]]) -> None:
        super().__init__(instances, {})
        self.groups = groups
        self.group_calls: list[list[str]] = []

    def group_memberships(self, instance_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        self.group_calls.append(list(instance_ids))
        return {i: self.groups[i] for i in instance_ids if i in self.groups}


def _terminate(iid: str) -> Interruption:
    raw = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="blue-nodes", hook="drain", token=None)
    event = parse_event(raw)
    assert isinstance(event, Interruption)
    return event


def test_a_lifecycle_event_is_acted_on_only_while_its_action_waits_in_its_group() -> None:
    owned = {"eks:cluster-name": "blue"}
    settings = Settings.from_env({"CLUSTER_NAMES": "blue", "LIFECYCLE_HOOK_NAMES": "drain"})
    cases = {
        A: (("blue-nodes", "Terminating:Wait"), Reason.OWNED_INSTANCE_TAG, "drain"),
        B: (("blue-nodes", "Terminating:Proceed"), Reason.ACTION_NOT_PENDING, "skip"),  # completed already
        C: (("green-nodes", "Terminating:Wait"), Reason.GROUP_MISMATCH, "skip"),  # the event names another group
        D: (None, Reason.ACTION_NOT_PENDING, "skip"),  # in no group any more
    }
    for iid, (group, reason, action) in cases.items():
        source = LifecycleFacts({iid: _facts(iid, owned, "blue-nodes")}, {iid: group} if group else {})
        event = _terminate(iid)
        (result,) = decide_event(event, settings, source, now=event.event_time + 86_400, ws=WS)
        assert (result.decision.reason, result.decision.action) == (reason, action), iid
        assert source.group_calls == [[iid]]
        assert result.facts is not None and result.facts.in_group is (group is not None)
        assert Assessment.from_dict(result.to_dict()) == result  # the checkpoint keeps what Auto Scaling said


def test_an_instance_unknown_to_ec2_is_never_asked_of_auto_scaling() -> None:
    source = LifecycleFacts({}, {})
    event = _terminate(A)
    settings = Settings.from_env({"CLUSTER_NAMES": "blue", "LIFECYCLE_HOOK_NAMES": "drain"})
    (result,) = decide_event(event, settings, source, now=event.event_time, ws=WS)
    assert result.decision.reason is Reason.UNKNOWN_INSTANCE and source.group_calls == []

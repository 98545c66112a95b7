"""decide_event's call discipline with an in-memory facts source (the real adapters are tested over HTTP)."""

from __future__ import annotations

from collections.abc import Sequence

from drain_orchestrator.decide import Assessment, decide_event
from drain_orchestrator.events import Interruption, parse_event
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.ownership import Reason
from drain_orchestrator.settings import Settings
from testbed import samples

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

    result = decide_event(event, Settings.from_env({"CLUSTER_NAMES": "blue"}), source)

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

"""From an Interruption to per-instance Decisions: facts (one DescribeInstances; for a lifecycle event one
DescribeAutoScalingInstances), ownership, corroboration, node, hook rule.

Thin orchestration shared by `explain` and the workflow. The decision itself is pure (ownership.py, then
corroborate.py: what AWS says now must bear the event out); this module only fetches what it needs and applies the
lifecycle-hook rule for instances with nothing to drain.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from drain_orchestrator.aws import autoscaling as asg_api
from drain_orchestrator.aws import ec2 as ec2_api
from drain_orchestrator.corroborate import corroborate
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.ownership import Decision, Reason, decide, needs_asg_tags, with_node
from drain_orchestrator.settings import Settings
from drain_orchestrator.workflow_settings import WorkflowSettings

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_ec2 import EC2Client

    from drain_orchestrator.kube.rest import Kube

logger = logging.getLogger(__name__)


class FactsSource(Protocol):
    """What decide_event needs from AWS; `BotoFacts` is the real one."""

    def describe_instances(self, instance_ids: Sequence[str]) -> dict[str, InstanceFacts | None]: ...

    def asg_tags(self, asg_name: str) -> dict[str, str]: ...

    def group_memberships(self, instance_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(group, LifecycleState) per instance Auto Scaling has in a group; the others are absent."""
        ...

    def reservation_instances(self, reservation_id: str) -> list[str]:
        """The instances EC2 says are in the capacity reservation now."""
        ...


@dataclass(frozen=True)
class BotoFacts:
    ec2: EC2Client
    autoscaling: AutoScalingClient

    def describe_instances(self, instance_ids: Sequence[str]) -> dict[str, InstanceFacts | None]:
        return ec2_api.describe_instances(self.ec2, instance_ids)

    def asg_tags(self, asg_name: str) -> dict[str, str]:
        return asg_api.asg_tags(self.autoscaling, asg_name)

    def group_memberships(self, instance_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        found = asg_api.group_memberships(self.autoscaling, instance_ids)
        return {i: (m.group, m.lifecycle_state) for i, m in found.items()}

    def reservation_instances(self, reservation_id: str) -> list[str]:
        return ec2_api.reservation_instances(self.ec2, reservation_id)


@dataclass(frozen=True)
class Assessment:
    """A decision plus the facts it was made from (node lookup needs the DNS name and AZ)."""

    decision: Decision
    facts: InstanceFacts | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision.to_dict(),
            "facts": None if self.facts is None else self.facts.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Assessment:
        facts = data.get("facts")
        return cls(Decision.from_dict(data["decision"]), None if facts is None else InstanceFacts.from_dict(facts))


def with_reservation_instances(event: Interruption, source: FactsSource) -> Interruption:
    """A Capacity Block's event with the instances EC2 lists in its reservation now (the event names none); any
    other event as it is. Shared by explain and the workflow's "reservation-instances" step."""
    if event.capacity_reservation_id is None:
        return event
    return replace(event, instance_ids=tuple(source.reservation_instances(event.capacity_reservation_id)))


def decide_event(
    event: Interruption, settings: Settings, source: FactsSource, *, now: float, ws: WorkflowSettings
) -> list[Assessment]:
    """One DescribeInstances for all ids; ASG tags (once per group) only where instance tags do not decide; for
    an event with a lifecycle action, one DescribeAutoScalingInstances (per 50 ids) for the known instances. Each
    owned decision is then corroborated against those facts at ``now``."""
    facts_by_id = source.describe_instances(event.instance_ids)
    if event.lifecycle is not None:
        known = [i for i in event.instance_ids if facts_by_id.get(i) is not None]
        groups = source.group_memberships(known) if known else {}
        for iid in known:
            facts = facts_by_id[iid]
            assert facts is not None
            group, state = groups.get(iid, (None, None))
            facts_by_id[iid] = facts.with_group(group, state)
    asg_cache: dict[str, dict[str, str]] = {}
    assessments: list[Assessment] = []
    for instance_id in event.instance_ids:
        facts = facts_by_id.get(instance_id)
        if facts is not None and facts.asg_name is not None and needs_asg_tags(facts, settings):
            if facts.asg_name not in asg_cache:
                asg_cache[facts.asg_name] = source.asg_tags(facts.asg_name)
            facts = facts.with_asg_tags(asg_cache[facts.asg_name])
        decision = closed_change(corroborate(decide(instance_id, facts, settings, event), facts, event, now, ws), event)
        assessments.append(Assessment(decision, facts))
    return assessments


def closed_change(decision: Decision, event: Interruption) -> Decision:
    """A closed scheduled change is never drained: an owned instance's flow only returns its node to service if it
    was cordoned for that change (returns.py). Its age does not matter: returning a node destroys nothing."""
    if event.change_status != "closed" or not decision.owned:
        return decision
    if decision.action == "skip" and decision.reason is not Reason.STALE_EVENT:
        return decision  # ignored by settings, or another controller's instance
    return replace(decision, reason=Reason.CHANGE_CLOSED, action="return")


def locate_node(kube: Kube, assessment: Assessment, event: Interruption) -> Decision:
    """Look the node up for an owned instance and fold the answer in (no node → no-node decision)."""
    decision, facts = assessment.decision, assessment.facts
    if not decision.owned or facts is None:
        return decision
    from drain_orchestrator.kube.node_lookup import find_node  # noqa: PLC0415 - only owned instances need it

    node = find_node(kube, decision.instance_id, facts.private_dns_name, facts.az)
    return with_node(decision, node, event)

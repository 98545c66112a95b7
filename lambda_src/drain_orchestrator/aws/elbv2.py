"""Elastic Load Balancing v2 target groups and target health, for the load-balancer gate (workflow/gates.py).

Target groups in scope are the AWS Load Balancer Controller's for the cluster (its ``elbv2.k8s.aws/cluster`` tag)
plus the ones configured by ARN (TARGET_GROUP_ARNS). DescribeTargetHealth without a target list returns every
registered target, draining ones included, so one call per target group tells what still holds the instance.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drain_orchestrator.aws.errors import translated

if TYPE_CHECKING:
    from mypy_boto3_elbv2 import ElasticLoadBalancingv2Client
    from mypy_boto3_elbv2.type_defs import TargetDescriptionTypeDef

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
# states in which a load balancer may still send traffic to a target (or is about to)
HOLDING_STATES = ("initial", "healthy", "unhealthy", "draining", "unhealthy.draining")
REGISTERED_STATES = ("initial", "healthy", "unhealthy", "unhealthy.draining")  # draining not yet begun
_TAGS_PER_CALL = 20  # DescribeTags takes up to 20 resource ARNs


@dataclass(frozen=True)
class TargetGroup:
    arn: str
    name: str
    target_type: str  # instance | ip | lambda | alb
    by_hand: bool = False  # configured by ARN: the orchestrator deregisters the instance itself

    def to_dict(self) -> dict[str, object]:
        return {"arn": self.arn, "name": self.name, "target_type": self.target_type, "by_hand": self.by_hand}


@dataclass(frozen=True)
class TargetState:
    id: str
    port: int | None
    state: str


class Elbv2:
    """The ELBv2 calls the gate makes, counted (the gate's API cost shows in its summary)."""

    def __init__(self, client: ElasticLoadBalancingv2Client) -> None:
        self.client = client
        self.calls = 0

    @translated("elasticloadbalancing")
    def target_groups(self, cluster: str, configured: Sequence[str]) -> list[TargetGroup]:
        """The cluster's controller-managed target groups (by tag) and the configured ones."""
        listed: list[TargetGroup] = []
        for page in self.client.get_paginator("describe_target_groups").paginate():
            self.calls += 1
            listed.extend(_group(tg) for tg in page.get("TargetGroups", []))
        wanted = set(configured)
        others = [tg.arn for tg in listed if tg.arn not in wanted]
        tagged = self._tagged(others, CLUSTER_TAG, cluster)
        out = [tg for tg in listed if tg.arn in tagged]
        out.extend(TargetGroup(tg.arn, tg.name, tg.target_type, by_hand=True) for tg in listed if tg.arn in wanted)
        return out

    def _tagged(self, arns: Sequence[str], key: str, value: str) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(arns), _TAGS_PER_CALL):
            self.calls += 1
            res = self.client.describe_tags(ResourceArns=list(arns[start : start + _TAGS_PER_CALL]))
            for desc in res.get("TagDescriptions", []):
                tags = {t.get("Key"): t.get("Value") for t in desc.get("Tags", [])}
                if tags.get(key) == value and "ResourceArn" in desc:
                    found.add(desc["ResourceArn"])
        return found

    @translated("elasticloadbalancing")
    def targets(self, arn: str) -> list[TargetState]:
        """Every target registered in (or draining from) the target group."""
        self.calls += 1
        res = self.client.describe_target_health(TargetGroupArn=arn)
        out = []
        for d in res.get("TargetHealthDescriptions", []):
            target = d.get("Target", {})
            port = target.get("Port")
            out.append(TargetState(target.get("Id", ""), port, d.get("TargetHealth", {}).get("State", "unavailable")))
        return out

    @translated("elasticloadbalancing")
    def deregister(self, arn: str, targets: Iterable[TargetState]) -> None:
        batch: list[TargetDescriptionTypeDef] = [
            {"Id": t.id, "Port": t.port} if t.port is not None else {"Id": t.id} for t in targets
        ]
        if batch:
            self.calls += 1
            self.client.deregister_targets(TargetGroupArn=arn, Targets=batch)


def _group(tg: Any) -> TargetGroup:
    arn, name, kind = (str(tg.get(k, "")) for k in ("TargetGroupArn", "TargetGroupName", "TargetType"))
    return TargetGroup(arn, name, kind)

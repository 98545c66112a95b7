"""`status`: the groups of a cluster's nodes whose lifecycle hooks the function's IAM policy would not let it answer.

A node owned by its instance's own tags, in an Auto Scaling group that has one of this deployment's hooks but none of
the tags the policy conditions the lifecycle calls on (lifecycle_grant.py), would be drained, and its hook denied:
`lifecycle-access-denied`. Said before it happens, one line per group. Read-only: a LIST of nodes, then per 500
instances one DescribeInstances, per 50 one DescribeAutoScalingInstances, per group DescribeTags and
DescribeLifecycleHooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drain_orchestrator.lifecycle_grant import denial_warning
from drain_orchestrator.ownership import owning_cluster
from drain_orchestrator.settings import Settings

if TYPE_CHECKING:
    from drain_orchestrator.kube.rest import Kube


def lifecycle_warnings(kube: Kube, cluster: str, ec2: Any, autoscaling: Any, settings: Settings) -> list[str]:
    from drain_orchestrator.aws.autoscaling import asg_tags, group_memberships  # noqa: PLC0415
    from drain_orchestrator.aws.ec2 import describe_instances  # noqa: PLC0415
    from drain_orchestrator.node_identity import instance_id_from_provider_id  # noqa: PLC0415

    resp = kube.request("GET", "/api/v1/nodes")
    if not resp.ok:
        raise resp.error("list nodes")
    nodes: dict[str, str] = {}
    for n in resp.body.get("items") or []:
        iid = instance_id_from_provider_id((n.get("spec") or {}).get("providerID"))
        if iid:
            nodes[iid] = str((n.get("metadata") or {}).get("name"))
    if not nodes:
        return []
    facts = describe_instances(ec2, list(nodes))
    groups = group_memberships(autoscaling, [i for i, f in facts.items() if f is not None])
    by_group: dict[str, list[str]] = {}
    for iid, member in groups.items():
        found = facts.get(iid)
        if found is not None and owning_cluster(found, settings) == cluster:
            by_group.setdefault(member.group, []).append(nodes[iid])
    out = []
    for group, owned in sorted(by_group.items()):
        if not _answers_a_hook(autoscaling, group, settings):
            continue
        warning = denial_warning(group, asg_tags(autoscaling, group), settings)
        if warning is not None:
            out.append(f"cluster {cluster}: nodes {', '.join(sorted(owned))}: {warning}")
    return out


def _answers_a_hook(autoscaling: Any, group: str, settings: Settings) -> bool:
    from drain_orchestrator.aws.autoscaling import hook_names  # noqa: PLC0415

    return any(settings.owns_hook(h) for h in hook_names(autoscaling, group))

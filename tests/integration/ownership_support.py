"""Shared helpers of the integration tests: the Lambda role's access to a test cluster, and lifecycle action state."""

from __future__ import annotations

from typing import Any

ROLE = "drain-orchestrator"
GROUP = "drain-orchestrator"


def grant(testbed: Any, aws: Any, cluster: str, *, groups: list[str] | None = None) -> None:
    """An EKS cluster pointing at the local apiserver, with an access entry for the Lambda's role."""
    aws.eks_cluster(cluster)
    testbed.put_access_entry(cluster, aws.role_arn(ROLE), f"{ROLE}:{cluster}", [GROUP] if groups is None else groups)


def action_state(aws: Any, instance_id: str) -> dict[str, Any]:
    """The emulator's record of the one lifecycle action of ``instance_id``."""
    [action] = [a for a in aws.lifecycle_actions() if a["instance_id"] == instance_id]
    return action


def describe_cluster_calls(aws: Any, access_key: str, cluster: str) -> int:
    """DescribeCluster requests of ``cluster`` the emulator served to ``access_key`` (a role session's) since its
    reset: EKS is a REST protocol, so its request counter names the call by its path."""
    return sum(
        r["count"]
        for r in aws.requests()
        if (r["access_key"], r["service"], r["action"]) == (access_key, "eks", f"/clusters/{cluster}")
    )

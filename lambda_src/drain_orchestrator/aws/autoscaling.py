"""Auto Scaling adapter: ASG tags, lifecycle hook description, heartbeat and completion; retained instances."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from drain_orchestrator.aws.errors import translated
from drain_orchestrator.deadlines import hook_global_timeout

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient

LifecycleResult = Literal["CONTINUE", "ABANDON"]
# AWS answers ValidationError "No active Lifecycle Action found with token …" / "… with instance ID …" when
# the action was already completed, timed out or moved on: the work is done, retrying would loop forever.
# AWS has no distinct error code for it, so this one message prefix is the documented signal.
_NOT_ACTIVE = "No active Lifecycle Action found"
SERVICE = "autoscaling"
# An instance whose terminate hook was abandoned or timed out, kept by the group's instance lifecycle policy
# (RetentionTriggers.TerminateHookAbandon = retain) until someone terminates it.
RETAINED = "Terminating:Retained"
_CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
_CLUSTER_TAG_VALUES = ("owned", "shared")
_EKS_CLUSTER_NAME_TAG = "eks:cluster-name"


@dataclass(frozen=True)
class HookInfo:
    asg_name: str
    hook_name: str
    transition: str
    heartbeat_timeout: int
    global_timeout: int
    default_result: str


@translated(SERVICE)
def asg_tags(autoscaling: AutoScalingClient, asg_name: str) -> dict[str, str]:
    tags: dict[str, str] = {}
    paginator = autoscaling.get_paginator("describe_tags")
    for page in paginator.paginate(Filters=[{"Name": "auto-scaling-group", "Values": [asg_name]}]):
        for tag in page.get("Tags", []):
            if tag.get("ResourceId") == asg_name and "Key" in tag:
                tags[tag["Key"]] = tag.get("Value", "")
    return tags


@dataclass(frozen=True)
class RetainedInstance:
    asg_name: str
    instance_id: str
    availability_zone: str
    health_status: str


@translated(SERVICE)
def retained_instances(autoscaling: AutoScalingClient, cluster: str) -> list[RetainedInstance]:
    """Instances in ``Terminating:Retained`` of the cluster's Auto Scaling groups (tagged
    ``kubernetes.io/cluster/<cluster>`` = owned/shared or ``eks:cluster-name`` = cluster), sorted.

    DescribeAutoScalingGroups with tag filters: one paginated call per tag form (IAM: no resource-level scope)."""
    key = _CLUSTER_TAG_PREFIX + cluster
    filters: list[list[Any]] = [
        [{"Name": "tag-key", "Values": [key]}],
        [{"Name": f"tag:{_EKS_CLUSTER_NAME_TAG}", "Values": [cluster]}],
    ]
    found: dict[tuple[str, str], RetainedInstance] = {}
    paginator = autoscaling.get_paginator("describe_auto_scaling_groups")
    for flt in filters:
        for page in paginator.paginate(Filters=flt):
            for group in page.get("AutoScalingGroups", []):
                tags = {t.get("Key", ""): t.get("Value", "") for t in group.get("Tags", [])}
                if tags.get(key) not in _CLUSTER_TAG_VALUES and tags.get(_EKS_CLUSTER_NAME_TAG) != cluster:
                    continue
                name = group.get("AutoScalingGroupName", "")
                for inst in group.get("Instances", []):
                    if inst.get("LifecycleState") == RETAINED:
                        found[(name, inst["InstanceId"])] = RetainedInstance(
                            asg_name=name,
                            instance_id=inst["InstanceId"],
                            availability_zone=inst.get("AvailabilityZone", ""),
                            health_status=inst.get("HealthStatus", ""),
                        )
    return [found[k] for k in sorted(found)]


@translated(SERVICE)
def describe_hook(autoscaling: AutoScalingClient, asg_name: str, hook_name: str) -> HookInfo | None:
    try:
        hooks = autoscaling.describe_lifecycle_hooks(AutoScalingGroupName=asg_name, LifecycleHookNames=[hook_name]).get(
            "LifecycleHooks", []
        )
    except ClientError as exc:
        if _code(exc) == "ValidationError":  # the group is gone
            return None
        raise
    for hook in hooks:
        if hook.get("LifecycleHookName") == hook_name:
            heartbeat = int(hook.get("HeartbeatTimeout", 3600))
            global_timeout = hook_global_timeout(heartbeat, int(hook.get("GlobalTimeout") or 0) or None)
            return HookInfo(
                asg_name=asg_name,
                hook_name=hook_name,
                transition=hook.get("LifecycleTransition", ""),
                heartbeat_timeout=heartbeat,
                global_timeout=global_timeout,
                default_result=hook.get("DefaultResult", "ABANDON"),
            )
    return None


@translated(SERVICE)
def complete_lifecycle_action(
    autoscaling: AutoScalingClient,
    asg_name: str,
    hook_name: str,
    result: LifecycleResult,
    *,
    token: str | None = None,
    instance_id: str | None = None,
) -> Literal["completed", "already-done"]:
    """CompleteLifecycleAction by token (preferred) or instance id; an inactive action counts as done."""
    params: dict[str, Any] = {
        "AutoScalingGroupName": asg_name,
        "LifecycleHookName": hook_name,
        "LifecycleActionResult": result,
        **_identity(token, instance_id),
    }
    try:
        autoscaling.complete_lifecycle_action(**params)
    except ClientError as exc:
        if _not_active(exc):
            return "already-done"
        raise
    return "completed"


@translated(SERVICE)
def record_heartbeat(
    autoscaling: AutoScalingClient,
    asg_name: str,
    hook_name: str,
    *,
    token: str | None = None,
    instance_id: str | None = None,
) -> Literal["recorded", "already-done"]:
    """RecordLifecycleActionHeartbeat; "already-done" means stop heart-beating, the action is over."""
    params: dict[str, Any] = {
        "AutoScalingGroupName": asg_name,
        "LifecycleHookName": hook_name,
        **_identity(token, instance_id),
    }
    try:
        autoscaling.record_lifecycle_action_heartbeat(**params)
    except ClientError as exc:
        if _not_active(exc):
            return "already-done"
        raise
    return "recorded"


def _identity(token: str | None, instance_id: str | None) -> dict[str, str]:
    if token:
        return {"LifecycleActionToken": token}
    if instance_id:
        return {"InstanceId": instance_id}
    raise ValueError("a lifecycle action is identified by its token or its instance id")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _not_active(exc: ClientError) -> bool:
    message = str(exc.response.get("Error", {}).get("Message", ""))
    return _code(exc) == "ValidationError" and _NOT_ACTIVE in message

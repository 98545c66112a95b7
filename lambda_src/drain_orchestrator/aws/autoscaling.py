"""Auto Scaling adapter: ASG tags, lifecycle hook description, the instances' lifecycle states, heartbeat and
completion (typed answers, below); retained instances.

What heartbeats and completions answer, and how each answer is told apart (the one home of this rule):
- done: the call went through ("recorded" / "completed");
- ``already-done``: the action no longer waits (completed by someone, timed out, or replaced). AWS answers
  ValidationError with no code of its own; its message "No active Lifecycle Action found with token …" /
  "… with instance ID …" is the only signal, so that one prefix, here only, is read;
- ``group-gone``: any other ValidationError while DescribeAutoScalingGroups no longer knows the group (deleted mid-
  drain: its instances terminate without their hooks). Told by asking AWS, not by the message;
- access denied (AccessDenied, UnauthorizedOperation), throttled, unavailable: raised as AwsError with its
  failure kind (FORBIDDEN, THROTTLED, UNAVAILABLE) by aws/errors.py, from the error code;
- any other ValidationError: raised as AwsError kind INVALID.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from drain_orchestrator.aws.errors import AwsError, translated
from drain_orchestrator.deadlines import hook_global_timeout

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient

LifecycleResult = Literal["CONTINUE", "ABANDON"]
# AWS answers ValidationError "No active Lifecycle Action found with token …" / "… with instance ID …" when
# the action was already completed, timed out or moved on: the work is done, retrying would loop forever.
# AWS has no distinct error code for it, so this one message prefix is the documented signal.
_NOT_ACTIVE = "No active Lifecycle Action found"
SERVICE = "autoscaling"
# DescribeAutoScalingInstances takes at most 50 instance ids per call
_INSTANCES_PER_CALL = 50
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


@dataclass(frozen=True)
class GroupMembership:
    """One instance as DescribeAutoScalingInstances reports it: its group and lifecycle state."""

    instance_id: str
    group: str
    lifecycle_state: str


@translated(SERVICE)
def group_memberships(autoscaling: AutoScalingClient, instance_ids: Sequence[str]) -> dict[str, GroupMembership]:
    """The group and LifecycleState (e.g. ``Terminating:Wait``) of each instance Auto Scaling knows; an instance in
    no group is absent from the answer (AWS lists only the instances it has)."""
    wanted = list(dict.fromkeys(instance_ids))
    found: dict[str, GroupMembership] = {}
    paginator = autoscaling.get_paginator("describe_auto_scaling_instances")
    for start in range(0, len(wanted), _INSTANCES_PER_CALL):
        chunk = wanted[start : start + _INSTANCES_PER_CALL]
        for page in paginator.paginate(InstanceIds=chunk):
            for inst in page.get("AutoScalingInstances", []):
                iid = inst.get("InstanceId", "")
                if iid in chunk:
                    group, state = inst.get("AutoScalingGroupName", ""), inst.get("LifecycleState", "")
                    found[iid] = GroupMembership(iid, group, state)
    return found


@translated(SERVICE)
def group_exists(autoscaling: AutoScalingClient, asg_name: str) -> bool:
    groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg_name]).get("AutoScalingGroups", [])
    return any(g.get("AutoScalingGroupName") == asg_name for g in groups)


@translated(SERVICE)
def hook_names(autoscaling: AutoScalingClient, asg_name: str) -> list[str]:
    """The names of the group's lifecycle hooks (none when the group is gone)."""
    try:
        hooks = autoscaling.describe_lifecycle_hooks(AutoScalingGroupName=asg_name).get("LifecycleHooks", [])
    except ClientError as exc:
        if _code(exc) == "ValidationError":
            return []
        raise
    return [h["LifecycleHookName"] for h in hooks if "LifecycleHookName" in h]


@translated(SERVICE)
def complete_lifecycle_action(
    autoscaling: AutoScalingClient,
    asg_name: str,
    hook_name: str,
    result: LifecycleResult,
    *,
    token: str | None = None,
    instance_id: str | None = None,
) -> Literal["completed", "already-done", "group-gone"]:
    """CompleteLifecycleAction by token (preferred) or instance id; an inactive action counts as done, a deleted
    group as gone (module docstring)."""
    params: dict[str, Any] = {
        "AutoScalingGroupName": asg_name,
        "LifecycleHookName": hook_name,
        "LifecycleActionResult": result,
        **_identity(token, instance_id),
    }
    try:
        autoscaling.complete_lifecycle_action(**params)
    except ClientError as exc:
        answer = _action_over(autoscaling, asg_name, exc)
        if answer is None:
            raise
        return answer
    return "completed"


@translated(SERVICE)
def record_heartbeat(
    autoscaling: AutoScalingClient,
    asg_name: str,
    hook_name: str,
    *,
    token: str | None = None,
    instance_id: str | None = None,
) -> Literal["recorded", "already-done", "group-gone"]:
    """RecordLifecycleActionHeartbeat; "already-done" and "group-gone" mean stop heart-beating, the action is
    over (module docstring)."""
    params: dict[str, Any] = {
        "AutoScalingGroupName": asg_name,
        "LifecycleHookName": hook_name,
        **_identity(token, instance_id),
    }
    try:
        autoscaling.record_lifecycle_action_heartbeat(**params)
    except ClientError as exc:
        answer = _action_over(autoscaling, asg_name, exc)
        if answer is None:
            raise
        return answer
    return "recorded"


def _identity(token: str | None, instance_id: str | None) -> dict[str, str]:
    if token:
        return {"LifecycleActionToken": token}
    if instance_id:
        return {"InstanceId": instance_id}
    raise ValueError("a lifecycle action is identified by its token or its instance id")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _action_over(
    autoscaling: AutoScalingClient, asg_name: str, exc: ClientError
) -> Literal["already-done", "group-gone"] | None:
    """A ValidationError that says the action is over (module docstring); None: the error stands."""
    if _code(exc) != "ValidationError":
        return None
    message = str(exc.response.get("Error", {}).get("Message", ""))
    if _NOT_ACTIVE in message:
        return "already-done"
    try:
        exists = group_exists(autoscaling, asg_name)
    except AwsError:  # cannot tell (throttled, not allowed to look): the ValidationError stands
        return None
    return None if exists else "group-gone"

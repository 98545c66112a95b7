"""Auto Scaling extensions of the emulator.

Lifecycle actions: moto lacks CompleteLifecycleAction and RecordLifecycleActionHeartbeat. Here an action is *active*
for (ASG, hook, instance) while it waits; it is started by ``POST /_testbed/lifecycle/start`` (what AWS does when an
instance enters Pending:Wait / Terminating:Wait), completed by token or instance id, and times out after the hook's
HeartbeatTimeout (restarted by each heartbeat) or its global timeout (min(48 h, 100 x heartbeat timeout)). Each action
records its heartbeats (count, last time) and who completed it: the signing principal (an assumed role's IAM role
ARN) or ``timeout``. A completed, timed-out or unknown action answers ValidationError "No active Lifecycle Action
found with token ..." / "... with instance ID ...", as AWS does.

Instance lifecycle states: moto keeps every group's instances InService; ``POST /_testbed/autoscaling/instance-state``
sets one instance's LifecycleState (e.g. ``Terminating:Retained``, where a group's instance lifecycle policy keeps an
instance whose terminate hook was abandoned), as DescribeAutoScalingGroups / DescribeAutoScalingInstances show it.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from testbed.aws import sts


@dataclass
class LifecycleAction:
    asg: str
    hook: str
    instance_id: str
    token: str
    transition: str
    heartbeat_timeout: int
    global_deadline: float
    deadline: float
    state: str = "ACTIVE"  # ACTIVE | COMPLETED | TIMED_OUT | SUPERSEDED
    result: str | None = None
    heartbeats: int = 0
    last_heartbeat: float | None = None
    # the caller's principal (an assumed role's IAM role ARN, else "access-key:<id>"), or "timeout"
    completed_by: str | None = None
    completed_with: str | None = None  # "token" | "instance-id"
    completed_at: float | None = None
    history: list[str] = field(default_factory=list)

    def refresh(self, now: float) -> None:
        if self.state == "ACTIVE" and now >= min(self.deadline, self.global_deadline):
            self.state = "TIMED_OUT"
            self.completed_by = "timeout"
            self.completed_at = min(self.deadline, self.global_deadline)

    def to_dict(self) -> dict[str, Any]:
        return {
            "asg": self.asg,
            "hook": self.hook,
            "instance_id": self.instance_id,
            "token": self.token,
            "transition": self.transition,
            "state": self.state,
            "result": self.result,
            "heartbeats": self.heartbeats,
            "last_heartbeat": self.last_heartbeat,
            "completed_by": self.completed_by,
            "completed_with": self.completed_with,
            "completed_at": self.completed_at,
        }


class LifecycleStore:
    """Per-process store; cleared with moto's own reset so every test starts clean."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.actions: list[LifecycleAction] = []

    def start(self, asg: str, hook: str, instance_id: str) -> LifecycleAction:
        from moto.autoscaling.models import autoscaling_backends

        backend = autoscaling_backend(autoscaling_backends)
        hooks = backend.describe_lifecycle_hooks(asg, [hook])
        if not hooks:
            raise LookupError(f"no lifecycle hook {hook!r} on auto scaling group {asg!r}")
        h = hooks[0]
        now = time.time()
        hb = int(h.heartbeat_timeout)
        action = LifecycleAction(
            asg=asg,
            hook=hook,
            instance_id=instance_id,
            token=str(uuid.uuid4()),
            transition=str(h.lifecycle_transition),
            heartbeat_timeout=hb,
            global_deadline=now + min(172800, 100 * hb),
            deadline=now + hb,
        )
        with self.lock:
            # A new action for the same instance and hook replaces a stale one, as a new scale-in would.
            for a in self.actions:
                if a.asg == asg and a.hook == hook and a.instance_id == instance_id and a.state == "ACTIVE":
                    a.state, a.completed_at = "SUPERSEDED", now
            self.actions.append(action)
        return action

    def find_active(self, asg: str, hook: str, token: str | None, instance_id: str | None) -> LifecycleAction:
        from moto.autoscaling.exceptions import ValidationError

        now = time.time()
        with self.lock:
            for a in self.actions:
                a.refresh(now)
                if a.state != "ACTIVE" or a.asg != asg or a.hook != hook:
                    continue
                if (token and a.token == token) or (not token and instance_id and a.instance_id == instance_id):
                    return a
        if token:
            raise ValidationError(f"No active Lifecycle Action found with token {token}")
        raise ValidationError(f"No active Lifecycle Action found with instance ID {instance_id}")

    def describe(self) -> list[dict[str, Any]]:
        now = time.time()
        with self.lock:
            for a in self.actions:
                a.refresh(now)
            return [a.to_dict() for a in self.actions]

    def clear(self) -> None:
        with self.lock:
            self.actions.clear()


LIFECYCLE = LifecycleStore()


def autoscaling_backend(backends: Any) -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID

    return backends[DEFAULT_ACCOUNT_ID]["us-east-1"]


def install() -> None:
    from moto.autoscaling.exceptions import ValidationError
    from moto.autoscaling.responses import AutoScalingResponse
    from moto.core.responses import EmptyResult

    def _ident(resp: AutoScalingResponse) -> tuple[str, str, str | None, str | None]:
        asg = resp._get_param("AutoScalingGroupName")
        hook = resp._get_param("LifecycleHookName")
        token = resp._get_param("LifecycleActionToken")
        instance_id = resp._get_param("InstanceId")
        if not asg or not hook:
            raise ValidationError("AutoScalingGroupName and LifecycleHookName are required")
        if not token and not instance_id:
            raise ValidationError("Either LifecycleActionToken or InstanceId must be specified")
        return asg, hook, token, instance_id

    def complete_lifecycle_action(self: AutoScalingResponse) -> EmptyResult:
        asg, hook, token, instance_id = _ident(self)
        result = self._get_param("LifecycleActionResult")
        if result not in ("CONTINUE", "ABANDON"):
            raise ValidationError("LifecycleActionResult must be CONTINUE or ABANDON")
        action = LIFECYCLE.find_active(asg, hook, token, instance_id)
        with LIFECYCLE.lock:
            action.state = "COMPLETED"
            action.result = result
            action.completed_by = sts.caller_principal(self.headers.get("Authorization", ""))
            action.completed_with = "token" if token else "instance-id"
            action.completed_at = time.time()
        return EmptyResult()

    def record_lifecycle_action_heartbeat(self: AutoScalingResponse) -> EmptyResult:
        asg, hook, token, instance_id = _ident(self)
        action = LIFECYCLE.find_active(asg, hook, token, instance_id)
        with LIFECYCLE.lock:
            now = time.time()
            action.heartbeats += 1
            action.last_heartbeat = now
            action.deadline = now + action.heartbeat_timeout
        return EmptyResult()

    AutoScalingResponse.complete_lifecycle_action = complete_lifecycle_action  # type: ignore[attr-defined]
    AutoScalingResponse.record_lifecycle_action_heartbeat = record_lifecycle_action_heartbeat  # type: ignore[attr-defined]


def set_lifecycle_state(instance_id: str, state: str) -> dict[str, str]:
    from moto.autoscaling.models import autoscaling_backends

    for group in autoscaling_backend(autoscaling_backends).autoscaling_groups.values():
        for inst in group.instance_states:
            if inst.instance.id == instance_id:
                inst.lifecycle_state = state
                return {"asg": group.name, "instance_id": instance_id, "state": state}
    raise LookupError(f"instance {instance_id!r} is in no auto scaling group")

"""Auto Scaling extensions of the emulator, held to what AWS's API reference documents.

Lifecycle actions: moto lacks CompleteLifecycleAction and RecordLifecycleActionHeartbeat. Here an action is *active*
for (ASG, hook, instance) while it waits; it is started by ``POST /_testbed/lifecycle/start`` (what AWS does when an
instance enters Pending:Wait / Terminating:Wait), completed by token or instance id, and times out after the hook's
HeartbeatTimeout (restarted by each heartbeat, never past the global timeout) or its GlobalTimeout, whichever comes
first; a timed-out action gets the hook's DefaultResult, recorded as completed by ``timeout``. Each action records
its heartbeats (count, last time) and who completed it: the signing principal (an assumed role's IAM role ARN) or
``timeout``. A completed, timed-out or unknown action answers ValidationError "No active Lifecycle Action found with
token ..." / "... with instance ID ...", as AWS does; a call on a group that no longer exists answers
ValidationError "AutoScalingGroup name not found - ..." (the wording of AWS's other calls on a missing group).

Hooks: DescribeLifecycleHooks reports GlobalTimeout as AWS computes it, min(100 x HeartbeatTimeout, 172800 s) (moto
reports 172800 s for every hook). AWS offers no way to set it; ``POST /_testbed/autoscaling/hook-global-timeout``
does, so a test can watch an action expire in seconds (the value is reported and enforced like AWS's own).

Instance lifecycle states: moto keeps every group's instances InService. Here an action's start puts its instance in
the transition's wait state (``Terminating:Wait``, ``Pending:Wait``) and its end moves it on as AWS does: a
terminating instance to ``Terminating:Proceed`` whatever the result, a launching one to ``InService`` (CONTINUE) or
``Terminating:Proceed`` (ABANDON). DescribeAutoScalingInstances and DescribeAutoScalingGroups show these states (an
action that timed out is ended before they answer). ``POST /_testbed/autoscaling/instance-state`` sets one
instance's LifecycleState directly (e.g. ``Terminating:Retained``, where a group's instance lifecycle policy keeps
an instance whose terminate hook was abandoned).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from testbed.aws import sts

GLOBAL_TIMEOUT_MAX = 172800  # AWS: a lifecycle action lasts at most 48 h ...
GLOBAL_TIMEOUT_HEARTBEATS = 100  # ... or 100 x its heartbeat timeout, whichever is smaller
TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
# the instance's LifecycleState while an action of each transition waits, and after it ends with each result
WAIT_STATE = {TERMINATING: "Terminating:Wait", "autoscaling:EC2_INSTANCE_LAUNCHING": "Pending:Wait"}
ENDED_STATE = {
    (TERMINATING, "CONTINUE"): "Terminating:Proceed",
    (TERMINATING, "ABANDON"): "Terminating:Proceed",
    ("autoscaling:EC2_INSTANCE_LAUNCHING", "CONTINUE"): "InService",
    ("autoscaling:EC2_INSTANCE_LAUNCHING", "ABANDON"): "Terminating:Proceed",
}


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
    default_result: str = "ABANDON"
    state: str = "ACTIVE"  # ACTIVE | COMPLETED | TIMED_OUT | SUPERSEDED
    result: str | None = None
    heartbeats: int = 0
    last_heartbeat: float | None = None
    # the caller's principal (an assumed role's IAM role ARN, else "access-key:<id>"), or "timeout"
    completed_by: str | None = None
    completed_with: str | None = None  # "token" | "instance-id"
    completed_at: float | None = None
    history: list[str] = field(default_factory=list)

    def refresh(self, now: float) -> bool:
        """Time the action out (the hook's DefaultResult) once its heartbeat or global timeout passed; True if so."""
        if self.state == "ACTIVE" and now >= min(self.deadline, self.global_deadline):
            self.state = "TIMED_OUT"
            self.result = self.default_result
            self.completed_by = "timeout"
            self.completed_at = min(self.deadline, self.global_deadline)
            return True
        return False

    def to_dict(self) -> dict[str, Any]:
        return {
            "asg": self.asg,
            "hook": self.hook,
            "instance_id": self.instance_id,
            "token": self.token,
            "transition": self.transition,
            "default_result": self.default_result,
            "global_deadline": self.global_deadline,
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
        backend = autoscaling_backend(_backends())
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
            global_deadline=now + int(h.global_timeout),
            deadline=now + hb,
            default_result=str(h.default_result),
        )
        with self.lock:
            # A new action for the same instance and hook replaces a stale one, as a new scale-in would.
            for a in self.actions:
                if a.asg == asg and a.hook == hook and a.instance_id == instance_id and a.state == "ACTIVE":
                    a.state, a.completed_at = "SUPERSEDED", now
            self.actions.append(action)
        _set_state(asg, instance_id, WAIT_STATE.get(action.transition))
        return action

    def refresh_all(self) -> None:
        """End every action whose time is up, and move its instance on (before any describe answers)."""
        now = time.time()
        with self.lock:
            ended = [a for a in self.actions if a.refresh(now)]
        for a in ended:
            _ended(a)

    def find_active(self, asg: str, hook: str, token: str | None, instance_id: str | None) -> LifecycleAction:
        from moto.autoscaling.exceptions import ValidationError

        self.refresh_all()
        if asg not in autoscaling_backend(_backends()).autoscaling_groups:
            raise ValidationError(f"AutoScalingGroup name not found - AutoScalingGroup '{asg}' not found")
        with self.lock:
            for a in self.actions:
                if a.state != "ACTIVE" or a.asg != asg or a.hook != hook:
                    continue
                if (token and a.token == token) or (not token and instance_id and a.instance_id == instance_id):
                    return a
        if token:
            raise ValidationError(f"No active Lifecycle Action found with token {token}")
        raise ValidationError(f"No active Lifecycle Action found with instance ID {instance_id}")

    def describe(self) -> list[dict[str, Any]]:
        self.refresh_all()
        with self.lock:
            return [a.to_dict() for a in self.actions]

    def clear(self) -> None:
        with self.lock:
            self.actions.clear()


LIFECYCLE = LifecycleStore()


def autoscaling_backend(backends: Any) -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID

    return backends[DEFAULT_ACCOUNT_ID]["us-east-1"]


def _backends() -> Any:
    from moto.autoscaling.models import autoscaling_backends

    return autoscaling_backends


def _set_state(asg: str, instance_id: str, state: str | None) -> None:
    """Put an instance of a group in ``state`` (nothing when the group or the instance is gone)."""
    group = autoscaling_backend(_backends()).autoscaling_groups.get(asg)
    if group is None or state is None:
        return
    for inst in group.instance_states:
        if inst.instance.id == instance_id:
            inst.lifecycle_state = state


def _ended(action: LifecycleAction) -> None:
    """Move the instance on once none of its hooks' actions for this transition waits any more (AWS holds it in the
    wait state until every hook answered)."""
    with LIFECYCLE.lock:
        waiting = [
            a
            for a in LIFECYCLE.actions
            if a.state == "ACTIVE" and a.instance_id == action.instance_id and a.transition == action.transition
        ]
    if not waiting:
        _set_state(action.asg, action.instance_id, ENDED_STATE.get((action.transition, action.result or "")))


def aws_global_timeout(heartbeat_timeout: int) -> int:
    return min(GLOBAL_TIMEOUT_MAX, GLOBAL_TIMEOUT_HEARTBEATS * heartbeat_timeout)


def set_hook_global_timeout(asg: str, hook: str, seconds: int) -> dict[str, Any]:
    """The bed's knob for a hook's GlobalTimeout (AWS derives it; see the module docstring). Actions started after
    this use it; DescribeLifecycleHooks reports it."""
    hooks = autoscaling_backend(_backends()).describe_lifecycle_hooks(asg, [hook])
    if not hooks:
        raise LookupError(f"no lifecycle hook {hook!r} on auto scaling group {asg!r}")
    hooks[0].global_timeout = int(seconds)
    return {"asg": asg, "hook": hook, "global_timeout": int(seconds)}


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
        _ended(action)
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

    # Describe calls answer after the actions whose time is up were ended (their instances moved on).
    for name in ("describe_auto_scaling_instances", "describe_auto_scaling_groups"):
        served = getattr(AutoScalingResponse, name)

        def expired_first(self: AutoScalingResponse, _served: Any = served) -> Any:
            LIFECYCLE.refresh_all()
            return _served(self)

        setattr(AutoScalingResponse, name, expired_first)

    # GlobalTimeout as AWS computes it from the hook's HeartbeatTimeout (moto reports 48 h for every hook).
    from moto.autoscaling.models import LifecycleHook

    made = LifecycleHook.__init__

    def with_aws_global_timeout(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        self.global_timeout = aws_global_timeout(int(self.heartbeat_timeout))

    LifecycleHook.__init__ = with_aws_global_timeout  # type: ignore[method-assign]


def set_lifecycle_state(instance_id: str, state: str) -> dict[str, str]:
    for group in autoscaling_backend(_backends()).autoscaling_groups.values():
        for inst in group.instance_states:
            if inst.instance.id == instance_id:
                inst.lifecycle_state = state
                return {"asg": group.name, "instance_id": instance_id, "state": state}
    raise LookupError(f"instance {instance_id!r} is in no auto scaling group")

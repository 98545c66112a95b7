"""When a drain must be over, and the pacing that follows from it: heartbeats, rechecks, pass budgets.

Pure and the one home of these rules: the workflow and `explain` both ask this module, so what `explain` shows is
what the Lambda uses.
"""

from __future__ import annotations

from drain_orchestrator.interruption import Interruption
from drain_orchestrator.pacing import (
    GATE_RECHECK_MAX_SECONDS,
    GLOBAL_TIMEOUT_HEARTBEATS,
    HEARTBEAT_FALLBACK_INTERVAL,
    LIFECYCLE_GLOBAL_TIMEOUT_MAX,
    gate_recheck_delay,
    heartbeat_interval,
    held_wait,
    hook_global_timeout,
    pass_budget,
    recheck_delay,
    wait_seconds,
)
from drain_orchestrator.workflow_settings import WorkflowSettings

__all__ = [
    "GATE_RECHECK_MAX_SECONDS",
    "GLOBAL_TIMEOUT_HEARTBEATS",
    "HEARTBEAT_FALLBACK_INTERVAL",
    "LIFECYCLE_GLOBAL_TIMEOUT_MAX",
    "completion_deadline",
    "decide_deadline",
    "drain_deadline",
    "gate_recheck_delay",
    "heartbeat_interval",
    "held_wait",
    "hook_global_timeout",
    "pass_budget",
    "recheck_delay",
    "wait_seconds",
]

MIN_HEARTBEAT_TIMEOUT = 30  # the smallest HeartbeatTimeout AWS accepts, and the smallest we keep alive
COMPLETION_GRACE_SECONDS = 120  # completing the hook is retried this long past the deadline (below the expiry)
# An interruptible capacity reservation's warning comes two minutes before EC2 terminates the instance; the event's
# instance-termination-time says when exactly, and this notice stands in when it is missing.
CAPACITY_RESERVATION_NOTICE_SECONDS = 120


def drain_deadline(event: Interruption, ws: WorkflowSettings, hook_lifetime: int | None = None) -> float:
    """The epoch second by which this drain must be over. Every drain has one.

    ``hook_lifetime``: the lifecycle hook's global timeout when it could be read (see hook_global_timeout)."""
    if event.kind == "state-change":
        deadline = event.event_time + ws.deadline_state_change
    elif event.kind == "capacity-reservation-interruption":
        notice = event.event_time + CAPACITY_RESERVATION_NOTICE_SECONDS
        deadline = notice if event.deadline is None else event.deadline
    elif event.kind == "rebalance" or event.deadline is None:
        deadline = event.event_time + ws.deadline_rebalance  # no deadline in the event: the rebalance budget
    else:
        deadline = event.deadline
    if event.lifecycle is not None:
        if hook_lifetime is not None:
            deadline = event.event_time + hook_lifetime
        if ws.deadline_asg_terminate is not None and event.kind == "asg-terminate":
            deadline = min(deadline, event.event_time + ws.deadline_asg_terminate)
    return deadline


def completion_deadline(deadline: float, event: Interruption, hook_lifetime: int | None) -> float:
    """How long completing the lifecycle action is worth retrying: a little past the drain's deadline, never past
    the action's own expiry (after that AWS has applied its default result)."""
    end = deadline + COMPLETION_GRACE_SECONDS
    if hook_lifetime is not None:
        end = min(end, event.event_time + hook_lifetime)
    return max(end, deadline)


DECIDE_RETRY_MAX_SECONDS = 3600


def decide_deadline(event: Interruption, ws: WorkflowSettings) -> float:
    """How long reading the instances' facts is worth retrying: until the event's own deadline, at most an hour
    after the event (past that, the dead-letter queue and an operator serve the event better)."""
    return min(drain_deadline(event, ws), event.event_time + DECIDE_RETRY_MAX_SECONDS)

"""When a drain must be over, and the pacing that follows from it: heartbeats, rechecks, pass budgets.

Pure and the one home of these rules: the workflow and `explain` both ask this module, so what `explain` shows is
what the Lambda uses.
"""

from __future__ import annotations

from drain_orchestrator.interruption import Interruption
from drain_orchestrator.kinds import DeadlineRule, rule_of
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


def drain_deadline(
    event: Interruption, ws: WorkflowSettings, hook_lifetime: int | None = None, started: float | None = None
) -> float:
    """The epoch second by which this instance's flow must be over, by its kind's rule (kinds.KINDS). Every flow
    has one; the Lambda and `explain` both ask here.

    ``hook_lifetime``: the lifecycle hook's global timeout when it could be read (see hook_global_timeout).
    ``started``: when the flow first looked (asg-launch counts from there; `explain` passes none: the event's time)."""
    match rule_of(event.kind).deadline:
        case DeadlineRule.LAUNCH:
            return (event.event_time if started is None else started) + ws.launch_ready_timeout
        case DeadlineRule.STATE_CHANGE:
            deadline = event.event_time + ws.deadline_state_change
        case DeadlineRule.NOTICE:
            notice = event.event_time + CAPACITY_RESERVATION_NOTICE_SECONDS
            deadline = notice if event.deadline is None else event.deadline
        case DeadlineRule.REBALANCE:
            deadline = event.event_time + ws.deadline_rebalance
        case DeadlineRule.EVENT | DeadlineRule.HOOK:
            # no deadline in the event: the rebalance budget
            deadline = event.event_time + ws.deadline_rebalance if event.deadline is None else event.deadline
    if event.lifecycle is not None:
        if hook_lifetime is not None:
            deadline = event.event_time + hook_lifetime
        if ws.deadline_asg_terminate is not None and rule_of(event.kind).deadline is DeadlineRule.HOOK:
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
    if rule_of(event.kind).deadline is DeadlineRule.LAUNCH and event.deadline is not None:
        until = event.deadline  # a launch's own clock starts after the decision: bounded by its hook's lifetime
    else:
        until = drain_deadline(event, ws)
    return min(until, event.event_time + DECIDE_RETRY_MAX_SECONDS)

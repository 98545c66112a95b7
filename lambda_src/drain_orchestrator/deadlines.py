"""When a drain must be over, and the pacing that follows from it: heartbeats, rechecks, pass budgets.

Pure and the one home of these rules: the workflow and `explain` both ask this module, so what `explain` shows is
what the Lambda uses.
"""

from __future__ import annotations

import math

from drain_orchestrator.interruption import Interruption
from drain_orchestrator.kinds import DeadlineRule, rule_of
from drain_orchestrator.workflow_settings import WorkflowSettings

LIFECYCLE_GLOBAL_TIMEOUT_MAX = 48 * 3600  # AWS: a lifecycle action lasts at most 48 h ...
GLOBAL_TIMEOUT_HEARTBEATS = 100  # ... or 100 x its heartbeat timeout, whichever is smaller
MIN_HEARTBEAT_TIMEOUT = 30  # the smallest HeartbeatTimeout AWS accepts, and the smallest we keep alive
HEARTBEAT_FALLBACK_INTERVAL = 10  # beat this often while the hook's own timeout is unknown
COMPLETION_GRACE_SECONDS = 120  # completing the hook is retried this long past the deadline (below the expiry)
GATE_RECHECK_MAX_SECONDS = 15  # a gate (load-balancer deregistration, volume detach) is checked at least this often
# An interruptible capacity reservation's warning comes two minutes before EC2 terminates the instance; the event's
# instance-termination-time says when exactly, and this notice stands in when it is missing.
CAPACITY_RESERVATION_NOTICE_SECONDS = 120


def hook_global_timeout(heartbeat_timeout: int, reported: int | None) -> int:
    """A lifecycle action's lifetime: AWS's rule applied rather than the reported field alone (emulators
    report 48 h regardless)."""
    candidates = [LIFECYCLE_GLOBAL_TIMEOUT_MAX, GLOBAL_TIMEOUT_HEARTBEATS * heartbeat_timeout]
    if reported:
        candidates.append(reported)
    return min(candidates)


def heartbeat_interval(heartbeat_timeout: int | None) -> int:
    """Beat at a third of the timeout: a failed or late beat still leaves time for two more tries."""
    if heartbeat_timeout is None:
        return HEARTBEAT_FALLBACK_INTERVAL
    return max(5, heartbeat_timeout // 3)


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


def recheck_delay(attempt: int, ws: WorkflowSettings) -> int:
    """The durable wait after drain pass ``attempt`` (0-based): doubling from RECHECK_MIN to RECHECK_MAX."""
    return int(min(ws.recheck_max_seconds, ws.recheck_min_seconds * 2 ** min(attempt, 16)))


def pass_budget(now: float, deadline: float, ws: WorkflowSettings) -> float:
    """Seconds one drain pass may run: DRAIN_PASS_SECONDS, never past the deadline."""
    return max(1.0, min(float(ws.drain_pass_seconds), deadline - now))


def wait_seconds(now: float, want: float, deadline: float, next_beat: float | None) -> int:
    """A durable wait of ``want`` seconds, shortened so it ends by the deadline and by the next heartbeat due."""
    end = min(now + want, deadline)
    if next_beat is not None:
        end = min(end, next_beat)
    return max(1, math.ceil(end - now))


DECIDE_RETRY_MAX_SECONDS = 3600


def decide_deadline(event: Interruption, ws: WorkflowSettings) -> float:
    """How long reading the instances' facts is worth retrying: until the event's own deadline, at most an hour
    after the event (past that, the dead-letter queue and an operator serve the event better)."""
    if rule_of(event.kind).deadline is DeadlineRule.LAUNCH and event.deadline is not None:
        until = event.deadline  # a launch's own clock starts after the decision: bounded by its hook's lifetime
    else:
        until = drain_deadline(event, ws)
    return min(until, event.event_time + DECIDE_RETRY_MAX_SECONDS)


def gate_recheck_delay(attempt: int, ws: WorkflowSettings) -> int:
    """The durable wait between two checks of a gate: like drain rechecks, but at most GATE_RECHECK_MAX_SECONDS
    (a target group's deregistration delay is known to the second; waiting much past it holds the instance)."""
    return min(GATE_RECHECK_MAX_SECONDS, recheck_delay(attempt, ws))

"""When a drain must be over, and the pacing that follows from it: heartbeats, rechecks, pass budgets.

Pure and the one home of these rules: the workflow and `explain` both ask this module, so what `explain` shows is
what the Lambda uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from drain_orchestrator.interruption import Interruption
from drain_orchestrator.kinds import DeadlineRule, rule_of
from drain_orchestrator.pacing import (
    BEAT_RETRY_MAX_SECONDS,
    GATE_RECHECK_MAX_SECONDS,
    GLOBAL_TIMEOUT_HEARTBEATS,
    HEARTBEAT_FALLBACK_INTERVAL,
    LIFECYCLE_GLOBAL_TIMEOUT_MAX,
    approval_wait,
    beat_retry_delay,
    gate_recheck_delay,
    heartbeat_interval,
    held_wait,
    hook_global_timeout,
    loop_spacing,
    pass_budget,
    recheck_delay,
    wait_seconds,
)
from drain_orchestrator.workflow_settings import WorkflowSettings

__all__ = [
    "BEAT_RETRY_MAX_SECONDS",
    "GATE_RECHECK_MAX_SECONDS",
    "GLOBAL_TIMEOUT_HEARTBEATS",
    "HEARTBEAT_FALLBACK_INTERVAL",
    "LIFECYCLE_GLOBAL_TIMEOUT_MAX",
    "ActionLife",
    "Clock",
    "approval_wait",
    "beat_retry_delay",
    "bounded_by_action",
    "completion_deadline",
    "completion_reserve",
    "decide_deadline",
    "drain_clock",
    "drain_deadline",
    "drain_start",
    "gate_recheck_delay",
    "heartbeat_interval",
    "held_wait",
    "hook_global_timeout",
    "in_respect_window",
    "loop_spacing",
    "pass_budget",
    "recheck_delay",
    "wait_seconds",
]

MIN_HEARTBEAT_TIMEOUT = 30  # the smallest HeartbeatTimeout AWS accepts, and the smallest we keep alive
COMPLETION_GRACE_SECONDS = 120  # completing the hook is retried this long past the deadline (below the expiry)
# An interruptible capacity reservation's warning comes two minutes before EC2 terminates the instance; the event's
# instance-termination-time says when exactly, and this notice stands in when it is missing.
CAPACITY_RESERVATION_NOTICE_SECONDS = 120
# EC2 starts terminating a Capacity Block's instances this long before the block's end-date (its Expiration Warning
# comes 10 minutes earlier still).
CAPACITY_BLOCK_TERMINATION_SECONDS = 1800


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
        case DeadlineRule.BLOCK_END:
            assert event.block_end is not None  # the parser sets it for every kind with this rule
            deadline = event.block_end - CAPACITY_BLOCK_TERMINATION_SECONDS
        case DeadlineRule.EVENT | DeadlineRule.HOOK:
            # no deadline in the event: the rebalance budget
            deadline = event.event_time + ws.deadline_rebalance if event.deadline is None else event.deadline
    if event.lifecycle is not None:
        if hook_lifetime is not None:
            deadline = event.event_time + hook_lifetime
        if ws.deadline_asg_terminate is not None and rule_of(event.kind).deadline is DeadlineRule.HOOK:
            deadline = min(deadline, event.event_time + ws.deadline_asg_terminate)
    return deadline


def drain_start(event: Interruption, ws: WorkflowSettings) -> float | None:
    """When a kind with a lead (kinds.KindRule.lead) starts: its deadline less the lead, after a durable wait (a
    Capacity Block's drain starts before EC2 does); None: at once."""
    lead = rule_of(event.kind).lead
    return None if lead is None else drain_deadline(event, ws) - getattr(ws, lead)


@dataclass(frozen=True)
class ActionLife:
    """A lifecycle action's life as AWS knows it now: the hook's timeouts (DescribeLifecycleHooks) and when it
    started. AWS sends the event as the action starts and reports no start time of its own, so ``started`` is the
    event's time; the action was seen pending (DescribeAutoScalingInstances, a heartbeat) before this is used."""

    heartbeat_timeout: int
    global_timeout: int  # hook_global_timeout: min(48 h, 100 x heartbeat timeout, what AWS reports)
    started: float

    @classmethod
    def seen(cls, heartbeat_timeout: int, global_timeout: int, event_time: float, now: float) -> ActionLife:
        """The action of an event, seen waiting at ``now``. Its start is the event's time unless that cannot be: an
        action still waiting a global timeout after the event did not start then (the event's time was rewritten,
        or it announces an earlier action of the instance), and one cannot start in the future. Then it is taken
        as starting now: the drain may outlive the real action, whose expiry AWS alone knows."""
        started = event_time if now - global_timeout < event_time <= now else now
        return cls(heartbeat_timeout, global_timeout, started)

    @property
    def expiry(self) -> float:
        """When AWS applies the hook's DefaultResult whatever the heartbeats."""
        return self.started + self.global_timeout

    def lapses(self, last_beat: float | None) -> float:
        """When the action ends if no heartbeat follows ``last_beat`` (None: none was recorded since it started)."""
        return min(self.expiry, (self.started if last_beat is None else last_beat) + self.heartbeat_timeout)


@dataclass(frozen=True)
class Clock:
    """A drain's clock (drain_clock): its verdict's time, how long completing its action is worth retrying, and
    until when it is a plain respectful drain (no grace clipped, nothing force-deleted)."""

    deadline: float
    completion_deadline: float
    respect_until: float
    expiry: float | None = None  # the lifecycle action's own expiry, when known


# Completing an action is kept at least this far from its expiry: AWS's clock and ours may differ by a second or
# two, and a completion sent on the last second could land after AWS applied the default.
EXPIRY_SAFETY_SECONDS = 5


def completion_reserve(heartbeat_timeout: int | None) -> int:
    """The time a drain leaves before its lifecycle action's expiry to complete it (with retries):
    COMPLETION_GRACE_SECONDS, at most a heartbeat interval (a third of the hook's timeout: 10 s for the
    smallest hook, whose whole life may be minutes)."""
    if heartbeat_timeout is None:
        return COMPLETION_GRACE_SECONDS
    return min(COMPLETION_GRACE_SECONDS, heartbeat_interval(heartbeat_timeout))


def drain_clock(event: Interruption, ws: WorkflowSettings, first_look: float, action: ActionLife | None) -> Clock:
    """The drain's clock from what is true now, the one rule the Lambda's "plan-now" step and `explain` apply.

    - Respect first: from the drain's start (its first look, or a scheduled change's start before the window)
      until MIN_DRAIN_SECONDS later, nothing is force-deleted and no grace is clipped; the deadline is never
      sooner. An event's age alone can therefore never shorten a grace period or bypass a PDB.
    - A lifecycle drain ends from the action's real life, not the event's: its expiry (started + the hook's global
      timeout as AWS reports it) less the time completion needs (completion_reserve), so the result the drain
      chooses (LIFECYCLE_RESULT_ON_FAILURE) is the one AWS applies; DEADLINE_ASG_TERMINATE_SECONDS counts from the
      drain's start. A drain that must end before its respectful minimum is over still never forces.
    - Every other kind: its rule's deadline (drain_deadline), never sooner than the respectful minimum."""
    start = first_look
    if event.window_start is not None:
        start = max(start, event.window_start - ws.scheduled_change_lead)
    if (begins := drain_start(event, ws)) is not None:
        start = max(start, begins)
    respect_until = start + ws.min_drain_seconds
    if event.lifecycle is not None and rule_of(event.kind).deadline is DeadlineRule.HOOK:
        # the hook unread (DescribeLifecycleHooks failed): the event's bound (48 h), as before it was read
        expiry = action.expiry if action is not None else drain_deadline(event, WorkflowSettings())
        hard = expiry - completion_reserve(None if action is None else action.heartbeat_timeout)
        wanted = hard if ws.deadline_asg_terminate is None else start + ws.deadline_asg_terminate
        deadline = min(hard, max(wanted, respect_until))
        until = max(deadline, min(deadline + COMPLETION_GRACE_SECONDS, expiry - EXPIRY_SAFETY_SECONDS))
        return Clock(deadline, until, respect_until, None if action is None else expiry)
    deadline = max(drain_deadline(event, ws), respect_until)
    return Clock(deadline, deadline + COMPLETION_GRACE_SECONDS, respect_until)


def in_respect_window(respect_until: float | None, now: float) -> bool:
    """Whether a drain is still in its respectful minimum (None: a plan written before it existed: never)."""
    return respect_until is not None and now < respect_until


def bounded_by_action(
    deadline: float, ws: WorkflowSettings, *, lapses: float | None = None, gone_at: float | None = None
) -> float:
    """A lifecycle drain's deadline once its action can no longer be kept: IAM denies the heartbeats (the action
    ``lapses`` then, last heartbeat + HeartbeatTimeout: the drain ends just before, nothing to complete), or the
    group was deleted (``gone_at``: its instances terminate now, without their hooks, so the drain gets what a
    state change would, DEADLINE_STATE_CHANGE_SECONDS)."""
    if lapses is not None:
        deadline = min(deadline, lapses - EXPIRY_SAFETY_SECONDS)
    if gone_at is not None:
        deadline = min(deadline, gone_at + ws.deadline_state_change)
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
    after the event, or after the drain's start for a kind that waits first (past that, the dead-letter queue and an
    operator serve the event better)."""
    if rule_of(event.kind).deadline is DeadlineRule.LAUNCH and event.deadline is not None:
        until = event.deadline  # a launch's own clock starts after the decision: bounded by its hook's lifetime
    else:
        until = drain_deadline(event, ws)
    begins = drain_start(event, ws)
    since = event.event_time if begins is None else max(event.event_time, begins)
    return min(until, since + DECIDE_RETRY_MAX_SECONDS)

"""Does what AWS says now bear the event out? Pure; the rules, and why, are in docs/reliability.md ("What the
orchestrator believes").

An event is a claim about an instance ("it will be interrupted at 10:02", "it is stopping", "its lifecycle action
waits for you"). Anyone who can invoke the function can make that claim, and a true claim goes stale (a replay from
a dead-letter queue, a late delivery, `invoke` on an old sample). So before an owned instance is acted on, the
claim is checked against what decide already fetched: EC2's state for the instance (DescribeInstances) and, for a
lifecycle event, Auto Scaling's view of it (DescribeAutoScalingInstances). A contradicted claim is declined with
its own reason; nothing else about the decision changes.

What an old event means follows from how its kind's deadline is set (kinds.DeadlineRule):
- lifecycle hooks (HOOK, LAUNCH): the action's state decides, never the event's age;
- interruption warnings, scheduled changes, rebalance recommendations and Capacity Blocks (EVENT, NOTICE, REBALANCE,
  BLOCK_END): a moment long past while EC2 still reports the instance running is a claim that did not come true
  (`stale-event`); a Capacity Block's instances are those EC2 says are in the reservation now;
- state changes (STATE_CHANGE): EC2 must report the event's state or one after it on the same path.
"""

from __future__ import annotations

from dataclasses import replace

from drain_orchestrator import deadlines
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.kinds import DeadlineRule, rule_of
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.workflow_settings import WorkflowSettings

# An interruption's moment may pass a little before EC2 reports the instance going (the warning is best effort, the
# termination takes seconds to start): two minutes, the length of a Spot warning, before its age means "stale".
STALE_AFTER_SECONDS = 120
RUNNING_STATES = ("pending", "running")
# The states each draining state is followed by: a stopping instance stops (or is terminated while stopping), a
# shutting-down one terminates. An instance EC2 reports in none of them is not where the event says.
LATER_STATES: dict[str, tuple[str, ...]] = {
    "stopping": ("stopping", "stopped", "shutting-down", "terminated"),
    "stopped": ("stopped", "shutting-down", "terminated"),
    "shutting-down": ("shutting-down", "terminated"),
    "terminated": ("terminated",),
}
EC2_STATES = ("pending", "running", "stopping", "stopped", "shutting-down", "terminated")
# Non-graceful node shutdown (the out-of-service taint) is only for an instance whose kubelet cannot run any more.
OUT_OF_SERVICE_STATES = ("stopped", "terminated")
# A lifecycle action waits while Auto Scaling holds the instance in its transition's wait state (with a warm pool,
# the Warmed: variant); any other state means it was completed, abandoned, timed out or never started.
PENDING_STATES: dict[str, tuple[str, ...]] = {
    "autoscaling:EC2_INSTANCE_TERMINATING": ("Terminating:Wait", "Warmed:Terminating:Wait"),
    "autoscaling:EC2_INSTANCE_LAUNCHING": ("Pending:Wait", "Warmed:Pending:Wait"),
}

# What an old event means, per deadline rule: `explain` says it next to the event's age.
FRESHNESS: dict[DeadlineRule, str] = {
    DeadlineRule.HOOK: (
        "its age changes nothing: the lifecycle action must still wait (DescribeAutoScalingInstances) in the event's "
        "group, and the drain's deadline comes from the action's remaining life"
    ),
    DeadlineRule.LAUNCH: "its age changes nothing: the lifecycle action must still wait in the event's group",
    DeadlineRule.EVENT: (
        f"acted on until {STALE_AFTER_SECONDS} s past its moment; later only if EC2 no longer reports the instance "
        "running (else stale-event)"
    ),
    DeadlineRule.NOTICE: (
        f"acted on until {STALE_AFTER_SECONDS} s past the termination time; later only if EC2 no longer reports the "
        "instance running (else stale-event)"
    ),
    DeadlineRule.REBALANCE: (
        f"acted on until {STALE_AFTER_SECONDS} s past DEADLINE_REBALANCE_SECONDS; later only if EC2 no longer "
        "reports the instance running (else stale-event)"
    ),
    DeadlineRule.BLOCK_END: (
        f"acted on until {STALE_AFTER_SECONDS} s past the block's end-date less 30 minutes (when EC2 terminates its "
        "instances); later only if EC2 no longer reports the instance running (else stale-event); the instances are "
        "those EC2 lists in the reservation when the drain starts"
    ),
    DeadlineRule.STATE_CHANGE: (
        "its age changes nothing: EC2 must report the event's state or a later one (else state-contradicts-event)"
    ),
}


def corroborate(
    decision: Decision, facts: InstanceFacts | None, event: Interruption, now: float, ws: WorkflowSettings
) -> Decision:
    """The decision, declined (action skip, its own reason) when what AWS says now contradicts the event."""
    if not decision.owned or decision.action == "skip" or facts is None:
        return decision
    reason = contradiction(facts, event, now, ws)
    return decision if reason is None else replace(decision, reason=reason, action="skip")


def contradiction(facts: InstanceFacts, event: Interruption, now: float, ws: WorkflowSettings) -> Reason | None:
    """Why the facts contradict the event, or None when they bear it out (or do not say)."""
    lifecycle = event.lifecycle
    if lifecycle is not None and facts.in_group is not None:
        if not facts.in_group:
            return Reason.ACTION_NOT_PENDING  # detached, terminated, or never in a group: nothing waits
        if facts.group != lifecycle.asg_name:
            return Reason.GROUP_MISMATCH
        if facts.lifecycle_state not in PENDING_STATES.get(lifecycle.transition, ()):
            return Reason.ACTION_NOT_PENDING
        return None
    if event.state is not None and rule_of(event.kind).deadline is DeadlineRule.STATE_CHANGE:
        if facts.state in EC2_STATES and facts.state not in LATER_STATES.get(event.state, (event.state,)):
            return Reason.STATE_CONTRADICTS_EVENT
        return None
    at = moment(event, ws)
    if at is not None and now > at + STALE_AFTER_SECONDS and facts.state in RUNNING_STATES:
        return Reason.STALE_EVENT
    return None


def moment(event: Interruption, ws: WorkflowSettings) -> float | None:
    """When the event's claim must have come true (None: the kind's claim is not about a moment): an interruption's
    time, a scheduled change's window end (its start when it names no end), a rebalance's drain budget, a Capacity
    Block's end-date less 30 minutes."""
    match rule_of(event.kind).deadline:
        case DeadlineRule.EVENT:
            return event.window_end if event.window_end is not None else deadlines.drain_deadline(event, ws)
        case DeadlineRule.NOTICE | DeadlineRule.REBALANCE | DeadlineRule.BLOCK_END:
            return deadlines.drain_deadline(event, ws)
        case _:
            return None


def out_of_service_allowed(ec2_state: str | None) -> bool:
    """The out-of-service taint is for an instance EC2 reports stopped or terminated, never on an event's word."""
    return ec2_state in OUT_OF_SERVICE_STATES


def age_effect(event: Interruption, now: float, ws: WorkflowSettings) -> dict[str, object]:
    """`explain`'s account of the event's age: how old it is, what an old event of its kind means, and, for a kind
    whose claim is about a moment, how far past it the event is."""
    out: dict[str, object] = {
        "age_seconds": round(now - event.event_time, 1),
        "freshness": FRESHNESS[rule_of(event.kind).deadline],
        "respectful_seconds": ws.min_drain_seconds,
    }
    at = moment(event, ws)
    if at is not None:
        out["past_moment_seconds"] = round(max(0.0, now - at), 1)
        out["stale_if_running"] = now > at + STALE_AFTER_SECONDS
    return out

"""One table of the event kinds: per kind, where it comes from, what it does by default, how its deadline is set
and which flow handles it. Pure.

The parser (events.py) produces the kinds; ownership.py reads the action column, deadlines.py the deadline column,
the workflow the flow and lifecycle columns. The CDK app keeps its own copy (it never imports this package:
infra/event_rules.py ``KIND_TABLE``); tests/infra/test_event_kinds.py compares every column of the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from drain_orchestrator.interruption import Kind


class DeadlineRule(StrEnum):
    """How a kind's deadline is set (deadlines.drain_deadline applies it)."""

    HOOK = "hook"  # the lifecycle hook's global timeout (min(48 h, 100 x heartbeat)), DEADLINE_ASG_TERMINATE_SECONDS
    LAUNCH = "launch"  # LAUNCH_READY_TIMEOUT_SECONDS after the first look for the node
    EVENT = "event"  # the time the event names (Spot: 2 min after the warning; Health: the window's start)
    NOTICE = "notice"  # the event's instance-termination-time, else 2 min after the warning
    STATE_CHANGE = "state-change"  # DEADLINE_STATE_CHANGE_SECONDS after the event
    REBALANCE = "rebalance"  # DEADLINE_REBALANCE_SECONDS after the event
    BLOCK_END = "block-end"  # a Capacity Block's end-date less 30 min, when EC2 starts terminating its instances


Flow = Literal["drain", "launch"]


@dataclass(frozen=True)
class KindRule:
    kind: Kind
    source: str  # the EventBridge source of its rule's pattern
    detail_type: str  # the EventBridge detail-type of its rule's pattern (and the parser's dispatch)
    label: str  # its EventBridge rule's description and its dashboard label
    action_variable: str | None  # the ACTION_* setting that chooses drain | cordon | ignore; None: fixed
    default_action: str  # drain | cordon | wait-ready
    deadline: DeadlineRule
    flow: Flow = "drain"  # drain_flow or launch_flow
    lifecycle: bool = False  # the flow completes the event's lifecycle action (and the gates hold it)
    voluntary: bool = False  # someone chose it: time to let work finish (drain policies, docs/drain.md)
    # the WorkflowSettings field of the lead: the event's flow waits durably until its deadline less the lead before
    # it looks for instances (deadlines.drain_start); None: at once
    lead: str | None = None


KINDS: dict[Kind, KindRule] = {
    rule.kind: rule
    for rule in (
        KindRule(
            "asg-terminate",
            "aws.autoscaling",
            "EC2 Instance-terminate Lifecycle Action",
            "ASG terminate lifecycle action: drain, then complete the hook",
            None,
            "drain",
            DeadlineRule.HOOK,
            lifecycle=True,
            voluntary=True,
        ),
        KindRule(
            "asg-launch",
            "aws.autoscaling",
            "EC2 Instance-launch Lifecycle Action",
            "ASG launch lifecycle action: wait for the node, then complete the hook",
            None,
            "wait-ready",
            DeadlineRule.LAUNCH,
            flow="launch",
        ),
        KindRule(
            "spot-interruption",
            "aws.ec2",
            "EC2 Spot Instance Interruption Warning",
            "EC2 Spot interruption warning (two minutes)",
            "ACTION_SPOT_INTERRUPTION",
            "drain",
            DeadlineRule.EVENT,
        ),
        KindRule(
            "capacity-reservation-interruption",
            "aws.ec2",
            "EC2 Capacity Reservation Instance Interruption Warning",
            "EC2 interruptible capacity reservation: instance interruption warning (two minutes)",
            "ACTION_CAPACITY_RESERVATION_INTERRUPTION",
            "drain",
            DeadlineRule.NOTICE,
        ),
        KindRule(
            "rebalance",
            "aws.ec2",
            "EC2 Instance Rebalance Recommendation",
            "EC2 instance rebalance recommendation",
            "ACTION_REBALANCE",
            "cordon",
            DeadlineRule.REBALANCE,
            voluntary=True,
        ),
        KindRule(
            "state-change",
            "aws.ec2",
            "EC2 Instance State-change Notification",
            "EC2 instance stopping or terminating",
            "ACTION_STATE_CHANGE",
            "drain",
            DeadlineRule.STATE_CHANGE,
        ),
        KindRule(
            "scheduled-change",
            "aws.health",
            "AWS Health Event",
            "AWS Health scheduled change for EC2",
            "ACTION_SCHEDULED_CHANGE",
            "drain",
            DeadlineRule.EVENT,
            voluntary=True,
        ),
        KindRule(
            "capacity-block-delivered",
            "aws.ec2",
            "Capacity Block Delivered",
            "EC2 Capacity Block delivered: drain its instances before the block ends",
            "ACTION_CAPACITY_BLOCK",
            "drain",
            DeadlineRule.BLOCK_END,
            voluntary=True,
            lead="capacity_block_lead",
        ),
        KindRule(
            "capacity-block-expiring",
            "aws.ec2",
            "Capacity Block Expiration Warning",
            "EC2 Capacity Block expiration warning (instances terminate in 10 minutes)",
            "ACTION_CAPACITY_BLOCK",
            "drain",
            DeadlineRule.BLOCK_END,
            voluntary=True,
        ),
    )
}


def rule_of(kind: str) -> KindRule:
    return KINDS[kind]  # type: ignore[index]

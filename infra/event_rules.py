"""EventBridge patterns, one rule per event kind (as the EC2, Auto Scaling and Health user guides give them). Pure
data, unit-testable without CDK.

EC2 and Health events cannot be filtered per cluster in EventBridge; the Lambda decides ownership from tags.
Lifecycle events can be: they are scoped to the served ASGs when those are known, and always to our hook names
(the function answers no other hook). Only `actionForeignHook` widens the terminate rule to every hook name,
so the function can drain an owned node for another's hook (which it still never completes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import OrchestratorConfig

DRAIN_STATES = ("stopping", "stopped", "shutting-down", "terminated")
# what the surge sweep's schedule sends the function (drain_orchestrator/workflow/schedules.py is_sweep)
SWEEP_EVENT = {"source": "drain-orchestrator", "detail-type": "Surge Sweep"}


@dataclass(frozen=True)
class RuleSpec:
    kind: str  # the event kind as the Lambda names it (events.py); a shared rule's first
    construct_id: str
    description: str
    pattern: dict[str, Any]
    kinds: tuple[str, ...] = ()  # every kind the rule carries (rows of KIND_TABLE sharing its construct id)


def _lifecycle_detail(config: OrchestratorConfig, *, any_hook: bool = False) -> dict[str, list[str]]:
    detail: dict[str, list[str]] = {}
    if config.served_asg_names:
        detail["AutoScalingGroupName"] = list(config.served_asg_names)
    if not any_hook:
        detail["LifecycleHookName"] = list(config.served_hook_names)
    return detail


def _with_detail(pattern: dict[str, Any], detail: dict[str, list[str]]) -> dict[str, Any]:
    return {**pattern, "detail": detail} if detail else pattern


@dataclass(frozen=True)
class KindRow:
    """One event kind as the infra sees it; a copy of the function's kinds.KINDS (infra never imports the function's
    package), compared column by column in tests/infra/test_event_kinds.py."""

    kind: str  # the `kind` dimension's value and the function's name for it
    # the rule's id: kinds of one source and action setting may share a rule (one pattern, their detail-types), so
    # the rules stay within the FailedInvocations alarm's 10 metrics (failure_alarms.py)
    construct_id: str
    source: str
    detail_type: str
    label: str  # the rule's description (and the dashboard's label for the kind)
    action: str | None  # the KindActions field (context key action<Kind>) that chooses it; None: always handled
    default_action: str
    lifecycle: str | None = None  # "terminate" | "launch": scoped to the served hooks and ASGs
    detail: tuple[tuple[str, tuple[str, ...]], ...] = ()  # extra detail filters of the pattern


KIND_TABLE: tuple[KindRow, ...] = (
    KindRow(
        "asg-terminate",
        "AsgTerminateRule",
        "aws.autoscaling",
        "EC2 Instance-terminate Lifecycle Action",
        "ASG terminate lifecycle action: drain, then complete the hook",
        None,
        "drain",
        lifecycle="terminate",
    ),
    KindRow(
        "asg-launch",
        "AsgLaunchRule",
        "aws.autoscaling",
        "EC2 Instance-launch Lifecycle Action",
        "ASG launch lifecycle action: wait for the node, then complete the hook",
        None,
        "wait-ready",
        lifecycle="launch",
    ),
    KindRow(
        "spot-interruption",
        "SpotInterruptionRule",
        "aws.ec2",
        "EC2 Spot Instance Interruption Warning",
        "EC2 Spot interruption warning (two minutes)",
        "spot_interruption",
        "drain",
    ),
    KindRow(
        "capacity-reservation-interruption",
        "CapacityReservationInterruptionRule",
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
        "EC2 interruptible capacity reservation: instance interruption warning (two minutes)",
        "capacity_reservation_interruption",
        "drain",
    ),
    KindRow(
        "rebalance",
        "RebalanceRule",
        "aws.ec2",
        "EC2 Instance Rebalance Recommendation",
        "EC2 instance rebalance recommendation",
        "rebalance",
        "cordon",
    ),
    KindRow(
        "state-change",
        "StateChangeRule",
        "aws.ec2",
        "EC2 Instance State-change Notification",
        "EC2 instance stopping or terminating",
        "state_change",
        "drain",
        detail=(("state", DRAIN_STATES),),
    ),
    KindRow(
        "scheduled-change",
        "ScheduledChangeRule",
        "aws.health",
        "AWS Health Event",
        "AWS Health scheduled change for EC2",
        "scheduled_change",
        "drain",
        detail=(("service", ("EC2",)), ("eventTypeCategory", ("scheduledChange",))),
    ),
    KindRow(
        "capacity-block-delivered",
        "CapacityBlockRule",
        "aws.ec2",
        "Capacity Block Delivered",
        "EC2 Capacity Block delivered: drain its instances before the block ends",
        "capacity_block",
        "drain",
    ),
    KindRow(
        "capacity-block-expiring",
        "CapacityBlockRule",
        "aws.ec2",
        "Capacity Block Expiration Warning",
        "EC2 Capacity Block expiration warning (instances terminate in 10 minutes)",
        "capacity_block",
        "drain",
    ),
)


def rule_specs(config: OrchestratorConfig) -> list[RuleSpec]:
    """The rules to create, one per construct id of KIND_TABLE (one per kind, but the kinds that share a rule). A
    kind whose action is `ignore` gets no rule: no invocation, no cost."""
    scopes = {
        "terminate": _lifecycle_detail(config, any_hook=config.actions.foreign_hook != "ignore"),
        "launch": _lifecycle_detail(config),
    }
    specs: dict[str, RuleSpec] = {}
    for row in KIND_TABLE:
        if row.action is not None and getattr(config.actions, row.action) == "ignore":
            continue
        shared = specs.get(row.construct_id)
        if shared is not None:  # one more detail-type on the rule (same source, same action setting, no detail)
            pattern = {**shared.pattern, "detail-type": [*shared.pattern["detail-type"], row.detail_type]}
            label = f"{shared.description}; {row.label}"
            specs[row.construct_id] = RuleSpec(shared.kind, row.construct_id, label, pattern, (*shared.kinds, row.kind))
            continue
        pattern = {"source": [row.source], "detail-type": [row.detail_type]}
        if row.lifecycle is not None:
            pattern = _with_detail(pattern, scopes[row.lifecycle])
        elif row.detail:
            pattern["detail"] = {key: list(values) for key, values in row.detail}
        specs[row.construct_id] = RuleSpec(row.kind, row.construct_id, row.label, pattern, (row.kind,))
    return list(specs.values())

"""EventBridge patterns, one rule per event kind (reference §4.7). Pure data, unit-testable without CDK.

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


@dataclass(frozen=True)
class RuleSpec:
    kind: str  # the event kind as the Lambda names it (events.py)
    construct_id: str
    description: str
    pattern: dict[str, Any]


def _lifecycle_detail(config: OrchestratorConfig, *, any_hook: bool = False) -> dict[str, list[str]]:
    detail: dict[str, list[str]] = {}
    if config.served_asg_names:
        detail["AutoScalingGroupName"] = list(config.served_asg_names)
    if not any_hook:
        detail["LifecycleHookName"] = list(config.served_hook_names)
    return detail


def _with_detail(pattern: dict[str, Any], detail: dict[str, list[str]]) -> dict[str, Any]:
    return {**pattern, "detail": detail} if detail else pattern


def rule_specs(config: OrchestratorConfig) -> list[RuleSpec]:
    """The rules to create. A kind whose action is `ignore` gets no rule: no invocation, no cost."""
    lifecycle = _lifecycle_detail(config)
    terminate = _lifecycle_detail(config, any_hook=config.actions.foreign_hook != "ignore")
    specs = [
        RuleSpec(
            "asg-terminate",
            "AsgTerminateRule",
            "ASG terminate lifecycle action: drain, then complete the hook",
            _with_detail(
                {"source": ["aws.autoscaling"], "detail-type": ["EC2 Instance-terminate Lifecycle Action"]},
                terminate,
            ),
        ),
        RuleSpec(
            "asg-launch",
            "AsgLaunchRule",
            "ASG launch lifecycle action: wait for the node, then complete the hook",
            _with_detail(
                {"source": ["aws.autoscaling"], "detail-type": ["EC2 Instance-launch Lifecycle Action"]},
                lifecycle,
            ),
        ),
    ]
    actions = config.actions
    if actions.spot_interruption != "ignore":
        specs.append(
            RuleSpec(
                "spot-interruption",
                "SpotInterruptionRule",
                "EC2 Spot interruption warning (two minutes)",
                {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
            )
        )
    if actions.capacity_reservation_interruption != "ignore":
        specs.append(
            RuleSpec(
                "capacity-reservation-interruption",
                "CapacityReservationInterruptionRule",
                "EC2 interruptible capacity reservation: instance interruption warning (two minutes)",
                {"source": ["aws.ec2"], "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"]},
            )
        )
    if actions.rebalance != "ignore":
        specs.append(
            RuleSpec(
                "rebalance",
                "RebalanceRule",
                "EC2 instance rebalance recommendation",
                {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
            )
        )
    if actions.state_change != "ignore":
        specs.append(
            RuleSpec(
                "state-change",
                "StateChangeRule",
                "EC2 instance stopping or terminating",
                {
                    "source": ["aws.ec2"],
                    "detail-type": ["EC2 Instance State-change Notification"],
                    "detail": {"state": list(DRAIN_STATES)},
                },
            )
        )
    if actions.scheduled_change != "ignore":
        specs.append(
            RuleSpec(
                "scheduled-change",
                "ScheduledChangeRule",
                "AWS Health scheduled change for EC2",
                {
                    "source": ["aws.health"],
                    "detail-type": ["AWS Health Event"],
                    "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]},
                },
            )
        )
    return specs

"""Template assertions for the EventBridge rules (one per kind, with the reference patterns, targeting the live
alias with a retry policy and a dead-letter queue), the surge sweep's and the liveness check's schedules, and the
lifecycle hooks the stack creates on the named ASGs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from drain_orchestrator.workflow import schedules
from tests.infra.conftest import Synthesized
from tests.infra.stack_support import alias_ref, logical_id, queue_arn

DRAIN_STATES = ["stopping", "stopped", "shutting-down", "terminated"]


def rule_patterns(synth: Synthesized) -> dict[str, dict[str, Any]]:
    rules = synth.resources("AWS::Events::Rule").items()
    return {k: v["Properties"]["EventPattern"] for k, v in rules if "EventPattern" in v["Properties"]}


def pattern_for(synth: Synthesized, detail_type: str) -> dict[str, Any] | None:
    found = [p for p in rule_patterns(synth).values() if p["detail-type"] == [detail_type]]
    assert len(found) <= 1
    return found[0] if found else None


# --- EventBridge --------------------------------------------------------------------------------------------


def test_one_rule_per_kind_with_reference_patterns(single: Synthesized) -> None:
    # lifecycle actions of our hook only: another tool's hook on the same ASG never invokes the function
    assert pattern_for(single, "EC2 Instance-terminate Lifecycle Action") == {
        "source": ["aws.autoscaling"],
        "detail-type": ["EC2 Instance-terminate Lifecycle Action"],
        "detail": {"LifecycleHookName": ["drain-orchestrator"]},
    }
    assert pattern_for(single, "EC2 Instance-launch Lifecycle Action") == {
        "source": ["aws.autoscaling"],
        "detail-type": ["EC2 Instance-launch Lifecycle Action"],
        "detail": {"LifecycleHookName": ["drain-orchestrator"]},
    }
    assert pattern_for(single, "EC2 Spot Instance Interruption Warning") == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Spot Instance Interruption Warning"],
    }
    assert pattern_for(single, "EC2 Capacity Reservation Instance Interruption Warning") == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    }
    assert pattern_for(single, "EC2 Instance Rebalance Recommendation") == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Instance Rebalance Recommendation"],
    }
    assert pattern_for(single, "EC2 Instance State-change Notification") == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Instance State-change Notification"],
        "detail": {"state": DRAIN_STATES},
    }
    assert pattern_for(single, "AWS Health Event") == {
        "source": ["aws.health"],
        "detail-type": ["AWS Health Event"],
        "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]},
    }


def test_rule_targets_alias_with_retry_policy_and_dead_letter_queue(single: Synthesized) -> None:
    dlq = queue_arn(single, "DeliveryDeadLetterQueue")
    for rule in single.resources("AWS::Events::Rule").values():
        (target,) = rule["Properties"]["Targets"]
        assert target["Arn"] == alias_ref(single)
        assert target["RetryPolicy"] == {"MaximumRetryAttempts": 20, "MaximumEventAgeInSeconds": 6 * 3600}
        assert target["DeadLetterConfig"] == {"Arn": dlq}
    # EventBridge may write to the DLQ only on behalf of our rules
    policy = next(
        p["Properties"]["PolicyDocument"]
        for p in single.resources("AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": logical_id(single, "AWS::SQS::Queue", "DeliveryDeadLetterQueue")}]
    )
    senders = [s for s in policy["Statement"] if s.get("Principal") == {"Service": "events.amazonaws.com"}]
    # the seven kinds' rules, the Capacity Block kinds' one, the surge sweep's and the liveness check's schedules
    assert len(senders) == 10
    assert all(s["Condition"]["ArnEquals"]["aws:SourceArn"]["Fn::GetAtt"][1] == "Arn" for s in senders)


def test_surges_left_behind_are_looked_for_on_a_schedule_that_sends_the_sweeps_input(single: Synthesized) -> None:
    (rule,) = [
        r["Properties"]
        for k, r in single.resources("AWS::Events::Rule").items()
        if "ScheduleExpression" in r["Properties"] and "SurgeSweep" in k
    ]
    assert rule["ScheduleExpression"] == "rate(15 minutes)"
    (target,) = rule["Targets"]
    transformer = target["InputTransformer"]
    assert transformer["InputPathsMap"] == {"id": "$.id", "time": "$.time"}
    sent = json.loads(transformer["InputTemplate"].replace("<id>", '"id"').replace("<time>", '"t"'))
    assert schedules.is_sweep(sent) and sent["id"] == "id"


@pytest.mark.parametrize("config", ["single", "multi"])
def test_a_liveness_check_is_scheduled_every_half_hour_with_the_functions_input(
    config: str, request: pytest.FixtureRequest
) -> None:
    synth: Synthesized = request.getfixturevalue(config)
    (rule,) = [r["Properties"] for k, r in synth.resources("AWS::Events::Rule").items() if "LivenessRule" in k]
    assert rule["ScheduleExpression"] == "rate(30 minutes)"
    (target,) = rule["Targets"]
    assert target["Arn"] == alias_ref(synth)
    transformer = target["InputTransformer"]
    sent = json.loads(transformer["InputTemplate"].replace("<id>", '"id"').replace("<time>", '"t"'))
    assert schedules.is_liveness(sent) and not schedules.is_sweep(sent)


def test_lifecycle_rules_scoped_to_served_asgs_and_hooks(multi: Synthesized) -> None:
    scope = {
        "AutoScalingGroupName": ["prod-workers", "staging-workers", "batch-spot"],
        "LifecycleHookName": ["node-drainer", "drain-orchestrator"],
    }
    for detail_type in ("EC2 Instance-terminate Lifecycle Action", "EC2 Instance-launch Lifecycle Action"):
        pattern = pattern_for(multi, detail_type)
        assert pattern is not None
        assert pattern["detail"] == scope


def test_ignored_kind_gets_no_rule(multi: Synthesized) -> None:
    assert pattern_for(multi, "EC2 Instance Rebalance Recommendation") is None  # actionRebalance=ignore
    # and no surge sweep schedule (surgeSweepMinutes=0); the liveness check's
    assert len(multi.resources("AWS::Events::Rule")) == 8
    assert "SURGE_SWEEP_MINUTES" not in multi.drainer("AWS::Lambda::Function")["Environment"]["Variables"]
    assert multi.drainer("AWS::Lambda::Function")["Environment"]["Variables"]["ACTION_REBALANCE"] == "ignore"


# --- lifecycle hooks ----------------------------------------------------------------------------------------


def test_lifecycle_hooks_created_on_named_asgs(single: Synthesized, multi: Synthesized) -> None:
    assert single.resources("AWS::AutoScaling::LifecycleHook") == {}
    hooks = sorted(
        (h["Properties"] for h in multi.resources("AWS::AutoScaling::LifecycleHook").values()),
        key=lambda h: h["AutoScalingGroupName"],
    )
    assert hooks == [
        {
            "AutoScalingGroupName": asg,
            "LifecycleHookName": "drain-orchestrator",
            "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
            "HeartbeatTimeout": 900,
            "DefaultResult": "CONTINUE",
        }
        for asg in ("batch-spot", "prod-workers")
    ]

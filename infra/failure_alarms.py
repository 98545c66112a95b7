"""Alarms for the failures that would otherwise stay silent, and the liveness schedule one of them needs.

Each alarm's description says what it means and its most likely causes, and links its section of docs/runbook.md:

- `StepsFailing`: steps of drains failed in each of STEPS_FAILING_MINUTES / 5 consecutive 5-minute periods
  (`StepFailures`, counted by the function for every failed step attempt, whatever the step). A drain retries a
  failing step until its deadline, which for a lifecycle hook can be 48 h away: without this alarm a forgotten
  `rbac apply` on a new cluster holds every scale-in silently until then.
- `Throttles`: Lambda throttled the function (reserved concurrency or the account's limit): events wait.
- `AsyncEventAge`: an event waited in Lambda's asynchronous queue longer than a Spot warning's two minutes.
- `EventBridgeFailedInvocations`: a rule could not invoke the function (the permission, the alias, the function
  gone), summed over the construct's rules (at most 10: one alarm's math may use 10 metrics).
- `Liveness`: no liveness check counted for LIVENESS_WINDOW (a schedule invokes the live alias every
  LIVENESS_MINUTES; workflow/liveness_flow.py says what one check proves). Missing data is breaching: silence is
  the failure.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .environment import METRICS_NAMESPACE, SERVICE_NAME

RUNBOOK = "docs/runbook.md"
PERIOD = cdk.Duration.minutes(5)
STEPS_FAILING_MINUTES = 15
ASYNC_EVENT_AGE_SECONDS = 120  # a Spot interruption warning's lead: an event older than this starts a drain late
LIVENESS_MINUTES = 30
LIVENESS_WINDOW = cdk.Duration.minutes(60)
# what the liveness schedule sends (drain_orchestrator.workflow.liveness_flow recognizes the same)
LIVENESS_EVENT = {"source": "drain-orchestrator", "detail-type": "Liveness Check"}
MAX_METRICS = 10  # in one alarm's math expression


def liveness_input() -> events.RuleTargetInput:
    return events.RuleTargetInput.from_object(
        {**LIVENESS_EVENT, "id": events.EventField.event_id, "time": events.EventField.time}
    )


def _own(metric_name: str, statistic: str, period: cdk.Duration) -> cw.Metric:
    return cw.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"service": SERVICE_NAME},
        statistic=statistic,
        period=period,
    )


def failed_invocations(rules: Sequence[events.IRule]) -> cw.MathExpression:
    if len(rules) > MAX_METRICS:
        raise ValueError(f"{len(rules)} rules: one alarm's math may sum at most {MAX_METRICS} FailedInvocations")
    series = {
        f"r{index}": cw.Metric(
            namespace="AWS/Events",
            metric_name="FailedInvocations",
            dimensions_map={"RuleName": rule.rule_name},
            statistic="Sum",
            period=PERIOD,
        )
        for index, rule in enumerate(rules)
    }
    return cw.MathExpression(
        expression=" + ".join(f"FILL({name}, 0)" for name in series),
        using_metrics=series,
        label="FailedInvocations (every rule)",
        period=PERIOD,
    )


def failure_alarms(
    scope: Construct,
    *,
    function: lambda_.IFunction,
    rules: Sequence[events.IRule],
) -> list[cw.Alarm]:
    """The alarms above, each with its description and runbook link (the caller adds the alarm topic's action)."""
    created: list[cw.Alarm] = []

    def alarm(
        alarm_id: str,
        metric: cw.IMetric,
        description: str,
        *,
        threshold: float = 1,
        periods: int = 1,
        below: bool = False,
    ) -> None:
        created.append(
            cw.Alarm(
                scope,
                alarm_id,
                metric=metric,
                threshold=threshold,
                evaluation_periods=periods,
                datapoints_to_alarm=periods,
                comparison_operator=(
                    cw.ComparisonOperator.LESS_THAN_THRESHOLD
                    if below
                    else cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
                ),
                treat_missing_data=cw.TreatMissingData.BREACHING if below else cw.TreatMissingData.NOT_BREACHING,
                alarm_description=f"{description} Runbook: {RUNBOOK}#{alarm_id.lower()}",
            )
        )

    alarm(
        "StepsFailing",
        _own("StepFailures", "Sum", PERIOD),
        f"Steps of drains have failed in every 5 minutes for {STEPS_FAILING_MINUTES} minutes; the drains retry until "
        "their deadlines (up to 48 h for a lifecycle hook), then fail. Most likely the function cannot act on a "
        "cluster: the RBAC not applied on a new cluster (drain-orchestrator rbac apply; 403), no access entry or "
        "aws-auth mapping (401), the API endpoint unreachable from the function's subnets, or an AWS API denying "
        "or throttling it. The log's error_kind and error say which.",
        periods=STEPS_FAILING_MINUTES // int(PERIOD.to_minutes()),
    )
    alarm(
        "Throttles",
        function.metric_throttles(period=PERIOD, statistic="Sum"),
        "Lambda throttled the drain orchestrator (reserved concurrency or the account's concurrency limit): events "
        "wait in Lambda's queue and drains start late.",
    )
    alarm(
        "AsyncEventAge",
        function.metric("AsyncEventAge", period=PERIOD, statistic="Maximum"),
        f"An event waited more than {ASYNC_EVENT_AGE_SECONDS} s (a Spot warning's lead) in Lambda's asynchronous "
        "queue before the drain orchestrator ran it: throttles, or retries after function errors.",
        threshold=ASYNC_EVENT_AGE_SECONDS * 1000,  # the metric is in milliseconds
    )
    alarm(
        "EventBridgeFailedInvocations",
        failed_invocations(rules),
        "An EventBridge rule could not invoke the drain orchestrator's live alias (its permission, the alias or "
        "the function gone, or Lambda refusing); the event went to the delivery dead-letter queue.",
    )
    alarm(
        "Liveness",
        _own("LivenessChecks", "Sum", LIVENESS_WINDOW),
        f"No liveness check of the drain orchestrator ran in {int(LIVENESS_WINDOW.to_minutes())} minutes (one is "
        f"scheduled every {LIVENESS_MINUTES}): the schedule cannot invoke the live alias, the function fails to start "
        "or to validate its settings, its durable checkpoints fail, or its logs (hence its metrics) cannot be "
        "written, e.g. a disabled customer key. Until it is back no drain runs either.",
        below=True,
    )
    return created

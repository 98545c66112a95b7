"""Dashboard and alarms for the orchestrator's EMF metrics (namespace DrainOrchestrator).

Dashboard graphs use SEARCH expressions, so they show every dimension combination the function emits
(cluster, kind, reason, service) without this module having to know them. Alarms cannot use SEARCH; they
watch exact series: the function's own Lambda metrics, the queues, and per served cluster the sum of
`DrainDeadlineMissed` over every event kind, as the workflow emits it with dimensions {cluster, kind,
service} (drain_orchestrator.observability.metric).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from .environment import METRICS_NAMESPACE, SERVICE_NAME
from .event_rules import KIND_TABLE
from .failure_alarms import failure_alarms
from .log_queries import DASHBOARD_QUERIES

# Every alarm's description ends with where its runbook section is (docs/runbook.md, one heading per alarm).
RUNBOOK = "docs/runbook.md"

PERIOD = cdk.Duration.minutes(5)

# (widget title, [(metric name, statistic)]) for the custom metrics, in dashboard order.
METRIC_WIDGETS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Events by kind", (("EventsReceived", "Sum"),)),
    ("Events ignored (by reason)", (("EventsIgnored", "Sum"),)),
    (
        "Drains",
        (("NodesCordoned", "Sum"), ("NodesDrained", "Sum"), ("LifecycleActionsCompleted", "Sum")),
    ),
    ("Pods evicted", (("PodsEvicted", "Sum"),)),
    ("Drain duration (s)", (("DrainDurationSeconds", "p50"), ("DrainDurationSeconds", "Maximum"))),
    ("Evictions blocked by PodDisruptionBudgets", (("EvictionsBlockedByPDB", "Sum"),)),
    ("Pods force-deleted", (("PodsForceDeleted", "Sum"),)),
    ("Deadlines missed", (("DrainDeadlineMissed", "Sum"),)),
    ("Drains refused (kubectl would refuse too)", (("DrainRefused", "Sum"),)),
    ("Drains held (s)", (("DrainHeldSeconds", "Maximum"),)),
    ("Lifecycle calls denied by IAM", (("LifecycleAccessDenied", "Sum"),)),
    ("Errors (function-reported)", (("Errors", "Sum"),)),
)


def search(metric_name: str, statistic: str) -> cw.MathExpression:
    return cw.MathExpression(
        expression=(
            f'SEARCH(\'Namespace="{METRICS_NAMESPACE}" MetricName="{metric_name}"\', '
            f"'{statistic}', {int(PERIOD.to_seconds())})"
        ),
        using_metrics={},
        label="",
        period=PERIOD,
    )


# Event kinds as the function names them (drain_orchestrator.kinds): the `kind` dimension's values.
EVENT_KINDS = tuple(row.kind for row in KIND_TABLE)


def deadline_missed(cluster: str) -> cw.MathExpression:
    """Missed deadlines in one cluster, whatever the event kind (9 series: within the 10-metric limit)."""
    return _over_kinds("DrainDeadlineMissed", "Sum", cluster)


def drain_held(cluster: str) -> cw.MathExpression:
    """Drains held past HELD_NOTIFY_SECONDS in one cluster, whatever the event kind: DrainHeldSeconds is emitted
    once per held drain, with the seconds held when it was said."""
    return _over_kinds("DrainHeldSeconds", "Maximum", cluster)


def lifecycle_access_denied(cluster: str) -> cw.MathExpression:
    """Drains in one cluster whose lifecycle hook IAM would not let the function answer (lifecycle-access-denied)."""
    return _over_kinds("LifecycleAccessDenied", "Sum", cluster)


def _over_kinds(metric_name: str, statistic: str, cluster: str) -> cw.MathExpression:
    series = {
        f"k{index}": cw.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=metric_name,
            dimensions_map={"cluster": cluster, "kind": kind, "service": SERVICE_NAME},
            statistic=statistic,
            period=PERIOD,
        )
        for index, kind in enumerate(EVENT_KINDS)
    }
    return cw.MathExpression(
        expression=" + ".join(f"FILL({name}, 0)" for name in series),
        using_metrics=series,
        label=f"{metric_name} {cluster}",
        period=PERIOD,
    )


@dataclass(frozen=True)
class DeadLetterQueue:
    title: str
    queue: sqs.IQueue
    runbook_anchor: str


class Observability(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alias: lambda_.Alias,
        clusters: Sequence[str],
        dead_letter_queues: Sequence[DeadLetterQueue],
        alarm_topic: sns.ITopic,
        log_group: logs.ILogGroup,
        function: lambda_.IFunction | None = None,
        rules: Sequence[events.IRule] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        action = cw_actions.SnsAction(alarm_topic)
        self.alarms: list[cw.Alarm] = []

        def alarm(alarm_id: str, metric: cw.IMetric, description: str, runbook_anchor: str) -> None:
            description = f"{description} Runbook: {RUNBOOK}#{runbook_anchor}"
            created = cw.Alarm(
                self,
                alarm_id,
                metric=metric,
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
            created.add_alarm_action(action)
            self.alarms.append(created)

        alarm(
            "FunctionErrors",
            alias.metric_errors(period=PERIOD, statistic="Sum"),
            "The drain orchestrator function failed (see its log group); a node may not have been drained.",
            "functionerrors",
        )
        for dlq in dead_letter_queues:
            alarm(
                f"{dlq.title.replace(' ', '')}NotEmpty",
                dlq.queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                f"{dlq.title}: events that were never handled. Inspect, fix, then redrive.",
                dlq.runbook_anchor,
            )
        for cluster in clusters:
            alarm(
                f"DeadlineMissed-{cluster}",
                deadline_missed(cluster),
                f"A drain in cluster {cluster} missed its deadline (the instance went away first).",
                "deadlinemissed-cluster",
            )
            alarm(
                f"LifecycleAccessDenied-{cluster}",
                lifecycle_access_denied(cluster),
                f"IAM denied the function a heartbeat or completion of a lifecycle hook in cluster {cluster}: the "
                "group fails the policy's tag condition, and its hook falls to its DefaultResult.",
                "lifecycleaccessdenied-cluster",
            )
            alarm(
                f"DrainHeld-{cluster}",
                drain_held(cluster),
                f"A drain in cluster {cluster} is held by PodDisruptionBudgets or failing evictions past "
                "HELD_NOTIFY_SECONDS (see its held notification).",
                "drainheld-cluster",
            )
        if function is not None:  # the failures that would otherwise stay silent (failure_alarms.py)
            for loud in failure_alarms(self, function=function, rules=rules):
                loud.add_alarm_action(action)
                self.alarms.append(loud)

        graphs: list[cw.IWidget] = [
            cw.GraphWidget(title=title, left=[search(name, stat) for name, stat in metrics], width=8)
            for title, metrics in METRIC_WIDGETS
        ]
        graphs.append(
            cw.GraphWidget(
                title="Function (live alias)",
                left=[
                    alias.metric_invocations(period=PERIOD, statistic="Sum"),
                    alias.metric_errors(period=PERIOD, statistic="Sum"),
                    alias.metric_throttles(period=PERIOD, statistic="Sum"),
                ],
                width=12,
            )
        )
        graphs.append(
            cw.GraphWidget(
                title="Dead letters",
                left=[
                    dlq.queue.metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic="Maximum", label=dlq.title
                    )
                    for dlq in dead_letter_queues
                ],
                width=12,
            )
        )
        logs_widgets: list[cw.IWidget] = [
            cw.LogQueryWidget(
                title=query.title,
                log_group_names=[log_group.log_group_name],
                query_lines=list(query.lines),
                view=cw.LogQueryVisualizationType.TABLE,
                width=24,
                height=6,
            )
            for query in DASHBOARD_QUERIES
        ]
        self.dashboard = cw.Dashboard(self, "Dashboard", default_interval=cdk.Duration.hours(6))
        self.dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms), width=24))
        for start in range(0, len(graphs), 3):  # one add_widgets call = one row
            self.dashboard.add_widgets(*graphs[start : start + 3])
        for widget in logs_widgets:  # the executions and nodes behind the graphs (queries: infra.log_queries)
            self.dashboard.add_widgets(widget)

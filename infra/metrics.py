"""`metric...()` helpers for the orchestrator's own metrics (the dashboard's graphs), for an app's own alarms and
dashboards.

The function emits EMF metrics in namespace DrainOrchestrator with dimensions {cluster, kind, service} (and
`reason` on EventsIgnored). Without dimensions a helper returns a SEARCH expression over every combination (graphs
only: alarms cannot use SEARCH); with `cluster` and `kind` it returns that exact series, which an alarm can watch.
"""

from __future__ import annotations

from collections.abc import Callable

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cw

from .environment import METRICS_NAMESPACE, SERVICE_NAME
from .observability import PERIOD, deadline_missed


def orchestrator_metric(
    metric_name: str,
    *,
    cluster: str | None = None,
    kind: str | None = None,
    statistic: str = "Sum",
    period: cdk.Duration | None = None,
) -> cw.IMetric:
    period = period or PERIOD
    if cluster is None and kind is None:
        return cw.MathExpression(
            expression=(
                f'SEARCH(\'Namespace="{METRICS_NAMESPACE}" MetricName="{metric_name}"\', '
                f"'{statistic}', {int(period.to_seconds())})"
            ),
            using_metrics={},
            label="",
            period=period,
        )
    if cluster is None or kind is None:
        raise ValueError(f"{metric_name}: give both cluster and kind (the series' dimensions), or neither")
    return cw.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"cluster": cluster, "kind": kind, "service": SERVICE_NAME},
        statistic=statistic,
        period=period,
    )


def _helper(metric_name: str, default_statistic: str = "Sum") -> Callable[..., cw.IMetric]:
    def method(
        self: object,
        *,
        cluster: str | None = None,
        kind: str | None = None,
        statistic: str = default_statistic,
        period: cdk.Duration | None = None,
    ) -> cw.IMetric:
        return orchestrator_metric(metric_name, cluster=cluster, kind=kind, statistic=statistic, period=period)

    method.__doc__ = f"`{metric_name}` ({default_statistic} by default); see infra.metrics."
    return method


class OrchestratorMetrics:
    """Mixed into `DrainOrchestrator`: one helper per metric of the dashboard."""

    metric_events_received = _helper("EventsReceived")
    metric_events_ignored = _helper("EventsIgnored")
    metric_nodes_cordoned = _helper("NodesCordoned")
    metric_nodes_drained = _helper("NodesDrained")
    metric_lifecycle_actions_completed = _helper("LifecycleActionsCompleted")
    metric_pods_evicted = _helper("PodsEvicted")
    metric_drain_duration = _helper("DrainDurationSeconds", "p50")
    metric_evictions_blocked_by_pdb = _helper("EvictionsBlockedByPDB")
    metric_pods_force_deleted = _helper("PodsForceDeleted")
    metric_drain_deadline_missed = _helper("DrainDeadlineMissed")
    metric_function_reported_errors = _helper("Errors")
    metric_lifecycle_access_denied = _helper("LifecycleAccessDenied")

    @staticmethod
    def metric_deadline_missed_in_cluster(cluster: str) -> cw.IMetric:
        """Missed deadlines in one cluster over every event kind: what the DeadlineMissed-<cluster> alarm watches."""
        return deadline_missed(cluster)

"""What one Lambda container keeps between invocations: validated settings and API clients.

Settings are validated once per container (cold start); a bad value fails every invocation with the variable's
name instead of crash-looping. Clients are built on first use and cached, so a warm container reuses connections,
cluster facts and tokens.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drain_orchestrator.settings import Settings, SettingsError
from drain_orchestrator.workflow_settings import WorkflowSettings

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_elbv2 import ElasticLoadBalancingv2Client
    from mypy_boto3_sns import SNSClient

    from drain_orchestrator.aws.reads_table import DynamoReadsTable
    from drain_orchestrator.kube.client import ClusterConnector
    from drain_orchestrator.kube.rest import Kube

# Where a test simulates a crash (a Lambda killed mid-invocation): called with a point's name. None in production.
fault_injection: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Config:
    settings: Settings
    workflow: WorkflowSettings


_config: Config | None = None
_config_error: SettingsError | None = None
_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()
_building: dict[str, threading.Lock] = {}  # one per client name: concurrent first uses wait for one build


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """The container's settings (validated at first use); with ``env``, validate those instead, uncached."""
    global _config, _config_error  # noqa: PLW0603 - per-container cache, the Lambda pattern
    if env is not None:
        return Config(Settings.from_env(env), WorkflowSettings.from_env(env))
    if _config is not None:
        return _config
    if _config_error is not None:
        raise _config_error
    try:
        _config = Config(Settings.from_env(os.environ), WorkflowSettings.from_env(os.environ))
    except SettingsError as exc:
        _config_error = exc
        raise
    return _config


def settings() -> Settings:
    return load_config().settings


def wsettings() -> WorkflowSettings:
    return load_config().workflow


def reset_config() -> None:
    """Forget cached settings and clients (tests and the CLI change the environment between runs)."""
    global _config, _config_error
    _config, _config_error = None, None
    with _clients_lock:
        _clients.clear()


def _cached(name: str, build: Callable[[], Any]) -> Any:
    with _clients_lock:
        if name in _clients:
            return _clients[name]
        lock = _building.setdefault(name, threading.Lock())
    # Built under its own lock only: building may call AWS; threads needing another client do not wait, and
    # threads needing this one (parallel instances, or a burst of executions in one container) wait for one
    # build instead of each making a client (and a DescribeCluster) that is thrown away.
    with lock:
        with _clients_lock:
            if name in _clients:
                return _clients[name]
        built = build()
        with _clients_lock:
            return _clients.setdefault(name, built)


def ec2() -> EC2Client:
    from drain_orchestrator.aws.clients import ec2_client  # noqa: PLC0415

    return _cached("ec2", ec2_client)  # type: ignore[no-any-return]


def ec2_first_try() -> EC2Client:
    """EC2 with a single attempt: the decide step's first read, which a throttled answer sends to the shared read."""
    from drain_orchestrator.aws.clients import ec2_single_attempt_client  # noqa: PLC0415

    return _cached("ec2-first-try", ec2_single_attempt_client)  # type: ignore[no-any-return]


def reads_table() -> DynamoReadsTable | None:
    """The shared-reads table named by SHARED_READS_TABLE (checked at cold start), None when there is none."""
    name = settings().shared_reads_table
    if name is None:
        return None
    from drain_orchestrator.aws.clients import dynamodb_client  # noqa: PLC0415
    from drain_orchestrator.aws.reads_table import DynamoReadsTable  # noqa: PLC0415

    return _cached("reads-table", lambda: DynamoReadsTable(dynamodb_client(), name))  # type: ignore[no-any-return]


def autoscaling() -> AutoScalingClient:
    from drain_orchestrator.aws.clients import autoscaling_client  # noqa: PLC0415

    return _cached("autoscaling", autoscaling_client)  # type: ignore[no-any-return]


def elbv2() -> ElasticLoadBalancingv2Client:
    from drain_orchestrator.aws.clients import elbv2_client  # noqa: PLC0415

    return _cached("elbv2", elbv2_client)  # type: ignore[no-any-return]


def sns() -> SNSClient:
    from drain_orchestrator.aws.sns import sns_client  # noqa: PLC0415

    return _cached("sns", sns_client)  # type: ignore[no-any-return]


def connector() -> ClusterConnector:
    """Connections to the served clusters: the endpoints and CAs given in CLUSTER_ENDPOINTS, DescribeCluster's for
    the others (and for those, after a 401 or when they fail)."""
    from drain_orchestrator.kube.client import ClusterConnector, given_facts  # noqa: PLC0415 - steps reaching a cluster

    def build() -> ClusterConnector:
        return ClusterConnector(given=given_facts(settings().cluster_endpoints))

    return _cached("connector", build)  # type: ignore[no-any-return]


def report_cluster_notices() -> None:
    """What the cluster connections noticed (kube/client.py ``FactsNotice``): given endpoint/CA that DescribeCluster
    contradicts (once per container and cluster: DescribeCluster's are used from then on), or a DescribeCluster read
    again after a failure that failed too; logged and counted as a step ends (checkpoint.step_config), so by the step
    that met it (or, steps running side by side, by one that ended beside it)."""
    with _clients_lock:
        built: ClusterConnector | None = _clients.get("connector")
    if built is None:
        return
    from drain_orchestrator.observability import logger, metric  # noqa: PLC0415

    for notice in built.take_notices():
        logger.error(f"cluster {notice.cluster}: {notice.what}", extra={"cluster": notice.cluster})
        metric("Errors", reason="cluster-endpoint", cluster=notice.cluster)


def kube(cluster: str) -> Kube:
    """A counted REST handle on the cluster (EKS token auth, CA verified), cached per container."""

    def build() -> Kube:
        from drain_orchestrator.kube.connect import connect  # noqa: PLC0415

        return connect(cluster=cluster, pool_size=32, connector=connector())

    return _cached(f"kube:{cluster}", build)  # type: ignore[no-any-return]


def inject_fault(point: str) -> None:
    if fault_injection is not None:
        fault_injection(point)

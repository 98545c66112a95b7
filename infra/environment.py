"""The Lambda's environment, in one place: the names must match `drain_orchestrator.settings`."""

from __future__ import annotations

import json

from .config import OrchestratorConfig
from .function_settings import bound_checked
from .reads_table import TABLE_VARIABLE

SERVICE_NAME = "drain-orchestrator"
METRICS_NAMESPACE = "DrainOrchestrator"


def lambda_environment(
    config: OrchestratorConfig, *, notification_topic_arn: str, shared_reads_table: str | None = None
) -> dict[str, str]:
    """``shared_reads_table``: the table's name where the construct creates it (config.shared_reads); without it
    every execution reads EC2 itself."""
    env = {
        "CLUSTER_NAMES": ",".join(config.clusters),
        "ACTION_REBALANCE": config.actions.rebalance,
        "ACTION_SPOT_INTERRUPTION": config.actions.spot_interruption,
        "ACTION_CAPACITY_RESERVATION_INTERRUPTION": config.actions.capacity_reservation_interruption,
        "ACTION_STATE_CHANGE": config.actions.state_change,
        "ACTION_SCHEDULED_CHANGE": config.actions.scheduled_change,
        "ACTION_CAPACITY_BLOCK": config.actions.capacity_block,
        "LIFECYCLE_HOOK_NAMES": ",".join(config.served_hook_names),
        "NOTIFICATION_TOPIC_ARN": notification_topic_arn,
        "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "LOG_LEVEL": config.log_level,
    }
    if config.ownership_tag:
        env["OWNERSHIP_TAG"] = config.ownership_tag
    if config.actions.foreign_hook != "ignore":
        env["ACTION_FOREIGN_HOOK"] = config.actions.foreign_hook
    if config.surge_sweep_minutes:  # with the schedule's rule (construct.py); without it each verdict looks
        env["SURGE_SWEEP_MINUTES"] = str(config.surge_sweep_minutes)
    if config.drain_controller_managed_nodes:
        env["DRAIN_CONTROLLER_MANAGED_NODES"] = ",".join(config.drain_controller_managed_nodes)
    if shared_reads_table is not None:
        env[TABLE_VARIABLE] = shared_reads_table
    if config.cluster_endpoints:
        env["CLUSTER_ENDPOINTS"] = cluster_endpoints_variable(config)
    env.update(config.drain_settings)  # names restricted to WORKFLOW_VARIABLES: cannot override the above
    # checked at synth (validation.py): the function's cold start need not simulate the pacing model again
    name, digest = bound_checked(env)
    env[name] = digest
    return env


def cluster_endpoints_variable(config: OrchestratorConfig) -> str:
    """CLUSTER_ENDPOINTS: CDK tokens (an `aws_eks.Cluster`'s attributes) stay in the string and resolve at deploy."""
    given = {
        cluster: {"endpoint": e.endpoint, "certificateAuthorityData": e.certificate_authority_data}
        for cluster, e in config.cluster_endpoints
    }
    return json.dumps(given, separators=(",", ":"))

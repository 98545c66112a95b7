"""The scheduled look for surges left behind (SURGE_SWEEP_MINUTES > 0).

An EventBridge schedule invokes the function with SWEEP_EVENT's source and detail-type; each served cluster's
surge-held Deployments and HPAs are listed and what no drain will take back (its execution lost: expired, or its node
gone) is restored (engine/surge_sweep.py). Drains' verdicts then skip that look (drain/surge_expiry.py
sweeps_at_verdict): two cluster-wide LISTs a schedule tick instead of two at every lone drain's verdict, and a surge
left behind is taken back within the period instead of at the next drain, however far off that is.

With SURGE_BLOCKED_PODS=never nothing is looked at (nothing is surged, and the RBAC for surge is not applied).
A cluster that cannot be reached is logged and counted (Errors, reason surge-sweep-failed); the execution still
succeeds: the next tick looks again, and a dead-letter message every period would bury the ones that matter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_step

from drain_orchestrator.clip import clip
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.checkpoint import Checkpointed, step_config


@dataclass(frozen=True)
class Swept(Checkpointed):
    """Per served cluster: the surges taken back ("Deployment ns/name: what changed"), or why it was not looked at."""

    restored: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    # per cluster, the objects skipped (a malformed annotation, a patch refused): the rest were looked at all the same
    skipped: dict[str, list[str]] = field(default_factory=dict)


def run(raw_event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    swept: Swept = context.step(sweep_step(), name="surge-sweep", config=step_config(Swept))
    return {"event_id": clip(str(raw_event.get("id") or "")) or None, "surge_sweep": swept.to_dict()}


@durable_step
def sweep_step(step_ctx: StepContext) -> Swept:
    from drain_orchestrator.drain.surge import SurgeStatus  # noqa: PLC0415
    from drain_orchestrator.engine.surge_sweep import restore_left_behind  # noqa: PLC0415

    restored: dict[str, list[str]] = {}
    failed: dict[str, str] = {}
    skipped: dict[str, list[str]] = {}
    if runtime.wsettings().surge_blocked_pods == "never":  # nothing is surged; its RBAC (rbac-surge.yaml) is not there
        logger.info("surge is off (SURGE_BLOCKED_PODS=never): no surges to look for")
        return Swept()
    for cluster in runtime.settings().cluster_names:
        try:
            notes = restore_left_behind(runtime.kube(cluster), time.time())
        except Exception as exc:  # one cluster unreachable: the others are still looked at, the next tick retries
            failed[cluster] = clip(f"{type(exc).__name__}: {exc}", 300)
            metric("Errors", reason="surge-sweep-failed", cluster=cluster)
            logger.warning("surges left behind not looked for", extra={"cluster": cluster, "error": failed[cluster]})
            continue
        bad = [n for n in notes if n.status == SurgeStatus.FAILED.value]
        restored[cluster] = [f"{n.workload}: {n.detail}" for n in notes if n not in bad]
        if restored[cluster]:
            metric("SurgesRestored", len(restored[cluster]), cluster=cluster)
            logger.info("surges left behind restored", extra={"cluster": cluster, "restored": restored[cluster]})
        if bad:
            skipped[cluster] = [f"{n.workload}: {n.detail}" for n in bad]
            metric("Errors", len(bad), reason="surge-sweep-skipped", cluster=cluster)
            logger.warning("surges left behind skipped", extra={"cluster": cluster, "skipped": skipped[cluster]})
    return Swept(restored=restored, failed=failed, skipped=skipped)

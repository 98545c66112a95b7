"""The drain's verdict takes back what surge before evict changed on workloads (docs/drain.md).

Run once the lifecycle action is completed and before the report (in the verdict step, verdict.py, or a step of its
own): whatever ended the drain
(drained, deadline, a fault, the node gone), the Deployments and HPAs this node surged get their original figures
back. Idempotent against the cluster (each workload records this node's entry), so a replay repeats it harmlessly.
The same step takes back surges other drains left behind (their execution lost before its verdict: expired, or
their node gone; engine/surge_sweep.py) when ``sweep`` (drain/surge_expiry.py sweeps_at_verdict: every drain alone,
about one drain of a storm) and surge is on (SURGE_BLOCKED_PODS is not ``never``); a failure there is logged and left
to the next drain's verdict.
"""

from __future__ import annotations

import time

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator.observability import logger
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.results import SurgeRestored
from drain_orchestrator.workflow.step_guard import faults_as


@durable_step
def surge_restore_step(step_ctx: StepContext, job: DrainJob, workloads: list[str], sweep: bool = True) -> SurgeRestored:
    return restore_surges(job, workloads, sweep)


@faults_as("surge-restore", SurgeRestored)
def restore_surges(job: DrainJob, workloads: list[str], sweep: bool = True) -> SurgeRestored:
    from drain_orchestrator.engine.surge_restore import restore_node  # noqa: PLC0415
    from drain_orchestrator.engine.surge_sweep import restore_left_behind  # noqa: PLC0415

    kube = runtime.kube(job.cluster)
    notes = restore_node(kube, job.node, workloads, pin=job.pin)
    # with surge off nothing is surged, and the RBAC applied for it lacks the look (rbac-surge.yaml: list HPAs)
    sweep = sweep and runtime.wsettings().surge_blocked_pods != "never"
    try:
        notes += restore_left_behind(kube, time.time()) if sweep else []
    except Exception as exc:  # not this drain's surge: the next verdict (or `surge restore`) looks again
        logger.warning("surges left behind not restored", extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
    restored = [f"{n.workload}: {n.detail}" for n in notes]
    if restored:
        logger.info("surge restored", extra={"restored": restored})
    return SurgeRestored(now=time.time(), restored=restored)

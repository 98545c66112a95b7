"""The begin step: a drain's clock, locate, cordon and announcement in one durable step, one checkpoint.

    plan (drain_steps.plan_now: deadlines.drain_clock, the hook's timeouts, the heartbeat that proves the action
    waits) -> locate the node -> cordon it (taking the phase and drain claims in the write) -> announce

Each part is the step it replaces (plan-now, locate, cordon, announce), run in turn; the step stops at the first
that leaves the flow something to decide, and the flow goes on from there with those parts' own steps: a lifecycle
action already answered, denied or whose proof failed (its heartbeat pace decides), a failed look (retried as
"locate-retry-N"), nothing to cordon (no node, not a drain nor a cordon), a scheduled change (its record and window
come before the cordon), a failed cordon (retried as "cordon-retry-N") or a node gone. A crash mid-step repeats it
from the top: the heartbeat and the look change nothing, the cordon's write is idempotent (the claims are this
execution's already), and the announcement may be said twice, as a crash in its own step could.
"""

from __future__ import annotations

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator.decide import Assessment
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.observability import logger
from drain_orchestrator.workflow.drain_steps import cordon_node, locate, plan_now
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.report_step import announce
from drain_orchestrator.workflow.results import Begun

# the heartbeat proofs after which the flow needs nothing before locating the node (pace.py): proved, or not tried
PROVED = (None, "recorded")


@durable_step
def begin_step(step_ctx: StepContext, event: Interruption, assessment: Assessment, run_id: str) -> Begun:
    plan = plan_now(event, assessment.decision.instance_id)
    if plan.proof not in PROVED:
        return Begun(plan)
    job = DrainJob(event, assessment.decision, plan, run_id)
    located = locate(job, assessment, plan.last_beat)
    decision = located.decision
    if located.fault is not None or decision.node is None or decision.action not in ("drain", "cordon"):
        return Begun(plan, located)
    logger.thread_safe_append_keys(node=decision.node)  # as the flow does once the node is located
    if event.change_arn is not None or event.window_start is not None:  # a scheduled change: its steps first
        return Begun(plan, located)
    job = DrainJob(event, decision, plan, run_id, identity=located.identity)
    beats = [b for b in (plan.last_beat, located.last_beat) if b is not None]
    cordoned = cordon_node(job, max(beats) if beats else None)
    if cordoned.fault is not None or cordoned.gone or not (cordoned.cordon_claimed or cordoned.drain_claimed):
        return Begun(plan, located, cordoned)
    return Begun(plan, located, cordoned, announce(job, cordoned))

"""One instance's launch: wait (durably) for its node to register and be Ready, then complete the hook.

CONTINUE when Ready; LAUNCH_TIMEOUT_RESULT when LAUNCH_READY_TIMEOUT_SECONDS pass first (or the cluster stays
unreachable that long). An instance launching into a warm pool will not join now: CONTINUE at once.
"""

from __future__ import annotations

from aws_durable_execution_sdk_python import DurableContext

from drain_orchestrator import deadlines
from drain_orchestrator.decide import Assessment
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.outcome import InstanceOutcome, Result, lifecycle_result
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.checkpoint import step_config
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.lifecycle_steps import ready_step
from drain_orchestrator.workflow.pace import Pace, complete_lifecycle
from drain_orchestrator.workflow.results import DrainPlan, ReadyCheck

READY_RECHECK_SECONDS = 10


def launch_instance(ctx: DurableContext, event: Interruption, assessment: Assessment) -> InstanceOutcome:
    ws = runtime.wsettings()
    decision = assessment.decision
    summary = InstanceOutcome(
        decision.instance_id, decision.cluster, None, decision.reason.value, decision.action, node_looked=False
    )
    first: ReadyCheck | None = None
    if decision.action != "complete-lifecycle":
        first = ctx.step(ready_step(event, assessment, None), name="ready-0", config=step_config(ReadyCheck))
    now = first.now if first is not None else event.event_time
    give_up_at = deadlines.drain_deadline(event, ws, started=now)
    # the completion is worth retrying until the action would expire on its own (its global timeout)
    plan = DrainPlan(
        deadline=give_up_at,
        completion_deadline=deadlines.completion_deadline(give_up_at, event, None),
        heartbeat_interval=first.heartbeat_interval if first is not None else None,
        now=now,
    )
    job = DrainJob(event, decision, plan, run_id="")
    pace = Pace(ctx, event, decision.instance_id, now=now, interval=plan.heartbeat_interval, dry_run=ws.dry_run)
    if first is None:  # launching into the warm pool: it will not join now
        summary.lifecycle = complete_lifecycle(pace, job, "CONTINUE", "warm pool")
        return summary
    pace.absorb(first)
    check, n = first, 0
    while not check.ready and pace.now < give_up_at:
        pace.wait(READY_RECHECK_SECONDS, f"recheck-{n}", give_up_at)
        n += 1
        check = ctx.step(
            ready_step(event, assessment, pace.last_beat), name=f"ready-{n}", config=step_config(ReadyCheck)
        )
        pace.absorb(check)
    summary.node, summary.node_looked = check.node, True
    summary.result = result = Result.READY if check.ready else Result.TIMED_OUT
    if check.fault is not None and not check.ready:
        summary.error = check.fault.to_dict()
    outcome = lifecycle_result(result, ws.launch_timeout_result)
    summary.lifecycle = complete_lifecycle(pace, job, outcome, result.value)
    summary.heartbeats = pace.beats
    return summary

"""One instance's drain, from plan to verdict; every path ends in `_verdict`.

    begin (begin.py, one step): plan (deadline, heartbeat pace) -> locate node -> cordon + annotate -> announce
    (once: metric, "started" notification; NodeCordoned for a cordon only); where it stopped, the flow goes on with
    the parts' own steps: [scheduled-change: durable wait until window start - lead] -> cordon -> announce
    -> drain passes separated by durable waits (heartbeats when due); DrainStarted once the first pass did not drain
    -> gates (gates.py): load-balancer deregistration and volume detach, bounded by the deadline
    -> drained: the late look (late_look.py): pods bound after the cordon, until LATE_LOOK_SECONDS after it (none
       when the drain's last LIST came that late, and no gate held since)
    -> verdict (verdict.py, one step): complete the lifecycle action (CONTINUE when drained or the node is gone,
       LIFECYCLE_RESULT_ON_FAILURE otherwise), take back the node's surges, then phase claim, metrics, Kubernetes
       Event, final notification; a part that failed is retried as its own step, and the parts after it follow.

Failed steps are retried with durable waits by their failure kind (failures.RETRY_POLICIES) until the deadline;
then the failure path runs, and it does not depend on what failed.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from aws_durable_execution_sdk_python import DurableContext
from aws_durable_execution_sdk_python.config import Duration

from drain_orchestrator import deadlines
from drain_orchestrator.decide import Assessment
from drain_orchestrator.drain.report import DrainReport, forced_reasons, held_reasons
from drain_orchestrator.drain.surge_expiry import sweeps_at_verdict
from drain_orchestrator.failures import RETRY_POLICIES, FailureKind
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.kinds import rule_of
from drain_orchestrator.observability import logger
from drain_orchestrator.outcome import InstanceOutcome, Result, lifecycle_result
from drain_orchestrator.ownership import Reason
from drain_orchestrator.workflow import return_flow, runtime
from drain_orchestrator.workflow.approval import RESULTS, Approval, Choice
from drain_orchestrator.workflow.begin import begin_step
from drain_orchestrator.workflow.checkpoint import StepFault, step_config
from drain_orchestrator.workflow.drain_steps import cordon_step, locate_step, pass_step
from drain_orchestrator.workflow.gate_defs import PodIps
from drain_orchestrator.workflow.gates import Gates
from drain_orchestrator.workflow.held import HeldNotice, HeldWatch, held_of, held_step
from drain_orchestrator.workflow.hold_pace import HoldPace, wait_held
from drain_orchestrator.workflow.job import Drained, DrainJob
from drain_orchestrator.workflow.late_look import late_look
from drain_orchestrator.workflow.one_drain import OneDrain
from drain_orchestrator.workflow.pace import Pace, answerable, complete_lifecycle
from drain_orchestrator.workflow.report_step import announce_step, report_step, start_event_step
from drain_orchestrator.workflow.results import (
    Announced,
    Begun,
    Cordoned,
    EventWritten,
    Located,
    PassOutcome,
    Reported,
    SurgeRestored,
    Verdict,
)
from drain_orchestrator.workflow.surge_step import surge_restore_step
from drain_orchestrator.workflow.verdict import Completing, Surged, note_lifecycle, note_surges, verdict_step

StartNote = tuple[str, float]  # what the drain's DrainStarted Event says it does, and since when (epoch)


def drain_instance(ctx: DurableContext, event: Interruption, assessment: Assessment, run_id: str) -> InstanceOutcome:
    ws = runtime.wsettings()
    iid = assessment.decision.instance_id
    # the clock, locate, cordon and announcement in one step, as far as it could go (begin.py)
    begun: Begun = ctx.step(begin_step(event, assessment, run_id), name="begin", config=step_config(Begun))
    plan = begun.plan
    job = DrainJob(event, assessment.decision, plan, run_id)
    pace = Pace(
        ctx,
        event,
        iid,
        now=plan.now,
        interval=plan.heartbeat_interval,
        dry_run=ws.dry_run,
        heartbeat_timeout=plan.heartbeat_timeout,
    )
    pace.proved(plan)
    summary = InstanceOutcome(
        job.decision.instance_id,
        job.decision.cluster,
        job.decision.node,
        job.decision.reason.value,
        job.decision.action,
    )
    if plan.proof == "already-done":  # the action stopped waiting since the decision: nothing to drain it for
        summary.decision, summary.action = Reason.ACTION_NOT_PENDING.value, "skip"
        return summary
    job = _unkept(job, pace)
    pace.beat_if_due("start")

    located = begun.located
    loc = pace.retrying("locate", lambda lb: locate_step(job, assessment, lb), Located, job.plan.deadline, located)
    if loc.fault is not None:
        return _verdict(ctx, job, pace, summary, Result.FAILED, None, started_at=plan.now, error=loc.fault)
    decision = loc.decision
    job = replace(job.with_decision(decision), identity=loc.identity)
    summary.node, summary.decision, summary.action = decision.node, decision.reason.value, decision.action
    if decision.action == "complete-lifecycle":  # owned but no node: nothing to drain, let the ASG go on
        summary.lifecycle = complete_lifecycle(pace, job, "CONTINUE", "no node to drain")
        return summary
    if decision.action == "skip" or decision.node is None:
        return summary
    logger.thread_safe_append_keys(node=decision.node)
    if decision.action == "return":  # a closed scheduled change: nothing to drain (return_flow.py)
        return return_flow.close_change(ctx, job, summary)
    if event.change_arn is not None and not return_flow.change_goes_on(ctx, job, summary, "change-record"):
        return summary
    if event.window_start is not None:  # a scheduled change's window
        start_at = event.window_start - ws.scheduled_change_lead
        if start_at - pace.now >= 1:
            ctx.wait(Duration.from_seconds(int(start_at - pace.now)), name="until-window")
            pace.now = start_at
            if event.change_arn is not None and not return_flow.change_goes_on(ctx, job, summary, "change-check"):
                return summary

    cordoned = pace.retrying("cordon", lambda lb: cordon_step(job, lb), Cordoned, job.plan.deadline, begun.cordoned)
    started_at = cordoned.now
    summary.cordoned = cordoned.cordoned
    if cordoned.fault is not None:
        return _verdict(ctx, job, pace, summary, Result.FAILED, None, started_at=started_at, error=cordoned.fault)
    if cordoned.gone:
        summary.replaced(cordoned.replaced_by)
        return _verdict(ctx, job, pace, summary, Result.NODE_GONE, None, started_at=started_at)
    start: StartNote | None = None
    if cordoned.cordon_claimed or cordoned.drain_claimed:
        said = begun.announced or ctx.step(announce_step(job, cordoned), name="announce", config=step_config(Announced))
        start = (said.drain_start, started_at) if said.drain_start else None
    if decision.action == "cordon":
        summary.result = Result.CORDONED
        return return_flow.watch(ctx, job, summary, started_at)
    job = replace(job, counts_pods=cordoned.drain_claimed, cordon_claim=cordoned.claim, started_at=started_at)
    gated = Gates(ctx, job, pace, summary)
    drained = _one_drain(ctx, job, pace, summary, gated.ips, start)
    result, report, error = gated.after(drained)
    if result is Result.DRAINED:  # before the instance may go: pods bound after the cordon (late_look.py)
        result, report, error = late_look(
            ctx, job, pace, summary, Drained(result, report, error), gates_held=gated.held
        )
    summary = _verdict(ctx, job, pace, summary, result, report, started_at=started_at, error=error)
    return return_flow.watch(ctx, job, summary, pace.now)


def _one_drain(
    ctx: DurableContext, job: DrainJob, pace: Pace, summary: InstanceOutcome, ips: PodIps, start: StartNote | None
) -> Drained:
    """The node's one drain (one_drain.py): this execution drains it when it holds the node's drain claim, else it
    waits for the holder's verdict; a dry run changes nothing, so it takes no claim and drains."""
    if runtime.wsettings().dry_run:
        return _drain_passes(ctx, job, pace, summary, ips, start)
    claim = OneDrain(ctx, job, pace, summary)
    while True:
        turn = claim.turn()
        if isinstance(turn, Drained):
            return turn
        drained = _drain_passes(ctx, turn, pace, summary, ips, start)
        if claim.settle(drained):
            return drained


def _drain_passes(
    ctx: DurableContext, job: DrainJob, pace: Pace, summary: InstanceOutcome, ips: PodIps, start: StartNote | None
) -> Drained:
    """Passes until drained, refused, gone, failed for good, an operator's decision, or the deadline.
    The first pass that lists says its pod IPs into ``ips`` when wanted; a drain that outlives its first pass says
    so in its DrainStarted Event (``start``: what it does, since when)."""
    ws = runtime.wsettings()
    deadline = job.plan.deadline
    report: DrainReport | None = None
    n = ok_passes = faults = 0
    watch = HeldWatch(ws.held_notify_seconds)
    holds = HoldPace(ws, respect_until=job.plan.respect_until)
    approval: Approval | None = None
    while True:
        job = _unkept(job, pace)
        deadline = min(deadline, job.plan.deadline)
        chosen = approval.look(ctx, pace, n) if approval is not None else None
        if chosen is not None:
            summary.approval = chosen.to_dict()
            choice = Choice(chosen.decision)
            if choice in RESULTS:
                return Drained(RESULTS[choice], report)
            if choice is Choice.FORCE:
                job = replace(job, force_now=True)
        out: PassOutcome = ctx.step(
            pass_step(job, n, pace.last_beat, holds.after_held, ips.wanted, holds.after_queued, holds.may_queue),
            name=f"drain-pass-{n}",
            config=step_config(PassOutcome),
        )
        pace.absorb(out)
        ips.absorb(out.pod_ips)
        if out.identity is not None and job.identity is None:  # learned: the later passes act on that object
            job = replace(job, identity=out.identity)
        if out.gone:
            summary.replaced(out.replaced_by)
            return Drained(Result.NODE_GONE, report)
        if out.claim_lost:
            return Drained(Result.CLAIM_LOST, report)
        if out.deadline is not None:  # another execution waiting on this drain has an earlier deadline
            deadline = min(deadline, out.deadline)
        held_wait: float | None = None
        if out.fault is not None:
            policy = RETRY_POLICIES[FailureKind(out.fault.kind)]
            if policy.gives_up_after(faults) or pace.now >= deadline:
                return Drained(Result.FAILED, report, out.fault)
            # an open approval is looked at before each retry: a round is then two steps and a wait
            spacing = pace.spacing(deadline, 1 if approval is None else 2)
            want = float(policy.jittered(faults, f"drain-pass-{n}@{out.now}", spacing))
            faults += 1
            if n == 0 and start is not None:
                _announce_start(ctx, job, start)
        else:
            faults = 0
            assert out.report is not None
            report = out.report if report is None else report.merged(out.report)
            if n == 0 and start is not None and not (report.drained or report.refused or ws.dry_run):
                _announce_start(ctx, job, start)  # before any DrainHeld Event of this pass
            if watch.due(out.report, pace.now) and watch.since is not None:
                if ws.held_approval and not ws.dry_run:
                    every = deadlines.approval_wait(ws, deadline - pace.started)
                    approval = Approval(ctx, pace.now, deadline, job.node, job.event.event_id, every)
                held = held_of(job, out.report, watch.since, pace.now, deadline, approval.id if approval else None)
                said: HeldNotice = ctx.step(
                    held_step(job, held, out.report), name="held", config=step_config(HeldNotice)
                )
                pace.absorb(said)
            if report.drained:
                return Drained(Result.DRAINED, report)
            if report.refused:
                return Drained(Result.REFUSED, report)
            if ws.dry_run:  # one pass says what a drain would do; nothing changed, so more would only repeat it
                return Drained(Result.DRY_RUN, report)
            if pace.now >= deadline:
                return Drained(Result.DEADLINE_MISSED, report)
            held_wait = holds.after(out, pace.now, watch, asking=approval.every if approval is not None else None)
            want = float(deadlines.recheck_delay(ok_passes, ws)) if held_wait is None else held_wait
            ok_passes += 1
        if held_wait is None:
            pace.wait(want, f"recheck-{n}", deadline)
        else:  # no pass before the held wait is over: heartbeats fall inside it
            wait_held(pace, want, f"recheck-{n}", deadline)
        n += 1


def _unkept(job: DrainJob, pace: Pace) -> DrainJob:
    """The job once its lifecycle action can no longer be kept (IAM denies its heartbeats, or its group is gone):
    its steps beat no more, and its deadline is the action's remaining life (Pace.bound)."""
    if not pace.unkept:
        return job
    return replace(job, plan=replace(job.plan, deadline=pace.bound(job.plan.deadline), heartbeat_interval=None))


def _announce_start(ctx: DurableContext, job: DrainJob, start: StartNote) -> None:
    ctx.step(start_event_step(job, *start), name="announce-event", config=step_config(EventWritten))


def _verdict(
    ctx: DurableContext,
    job: DrainJob,
    pace: Pace,
    summary: InstanceOutcome,
    result: Result,
    report: DrainReport | None,
    *,
    started_at: float,
    error: StepFault | None = None,
) -> InstanceOutcome:
    """Complete the lifecycle action first (the instance must not wait on a report), then report: one "verdict" step
    (verdict.py), the parts it did not finish as their own steps."""
    summary.result = result
    summary.report = summary_of(report)
    if error is not None:
        summary.error = error.to_dict()
    completing: Completing | None = None
    if job.event.lifecycle is not None and rule_of(job.event.kind).lifecycle:
        why = lifecycle_result(result, runtime.wsettings().lifecycle_result_on_failure), result.value
        if answerable(pace):
            completing = why
        else:  # the answer is known without a call
            note_lifecycle(summary, complete_lifecycle(pace, job, *why))
    surged = _surges(job, report, summary)
    summary.heartbeats = pace.beats
    said: Verdict = ctx.step(
        verdict_step(job, summary, started_at, completing, surged), name="verdict", config=step_config(Verdict)
    )
    if completing is not None:  # done in the step, or retried here from its first attempt
        note_lifecycle(summary, complete_lifecycle(pace, job, *completing, first=said.completion))
    if surged is not None:
        _restore_surges(job, pace, surged, summary, said.surge)
    summary.heartbeats = pace.beats
    reported = said.reported or ctx.step(
        report_step(job, summary, started_at), name="report", config=step_config(Reported)
    )
    pace.now = max(pace.now, reported.now)
    summary.duration_seconds = reported.duration
    summary.notified = reported.notified
    return summary


# restoring a surge is retried (durable waits) this long after the verdict, past the drain's deadline if need be
SURGE_RESTORE_RETRY_SECONDS = 600


def _surges(job: DrainJob, report: DrainReport | None, summary: InstanceOutcome) -> Surged | None:
    """Whatever ended the drain, workloads surged for this node get their figures back (engine/surge.py): the
    workloads, and whether this verdict also sweeps surges left behind; None when this drain surged nothing."""
    if not summary.cordoned or job.decision.action != "drain" or runtime.wsettings().dry_run:
        return None
    surged = sorted({n.workload.split(" ", 1)[1] for n in (report.surge if report else []) if n.via})
    scheduled = runtime.settings().surge_sweep_minutes > 0
    return surged, sweeps_at_verdict(job.node, report.draining_seen if report else None, scheduled=scheduled)


def _restore_surges(
    job: DrainJob, pace: Pace, surged: Surged, summary: InstanceOutcome, first: SurgeRestored | None
) -> None:
    until = pace.now + SURGE_RESTORE_RETRY_SECONDS
    workloads, sweep = surged

    def step(_last_beat: float | None) -> Any:
        return surge_restore_step(job, workloads, sweep)

    note_surges(summary, pace.retrying("surge-restore", step, SurgeRestored, until, first))


def summary_of(report: DrainReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "evicted": report.count("evicted"),
        "blocked": sorted({b.pod for b in report.blocked}),
        "blocked_by": sorted({p for b in report.blocked for p in b.pdbs}),
        "forced": [f.pod for f in report.forced],
        "forced_reasons": forced_reasons(report),  # what held each forced pod, and what forced it
        "skipped": report.count("skipped"),
        "refused": [r.pod for r in report.refused],
        "held_by_policy": [h.pod for h in report.held_by_policy],  # let finish (wait-for-completion, do-not-disrupt)
        "remaining": report.count("remaining"),
        "held": held_reasons(report),  # why each pod still there was not evicted (reason, PDBs, message, status)
        "api_calls": report.api_calls,
        "passes": report.passes,
        **({"surge": [asdict(n) for n in report.surge]} if report.surge else {}),
        # a node of many pods: the lists above name the first ones, these count the others
        **({"left_out": dict(report.left_out)} if report.left_out else {}),
    }

"""One drain per node: the execution holding the node's drain claim drains, the others wait for its verdict.

    claim -> holder: drain passes (renewing the claim each pass, to the earliest deadline of all waiting), then
             write the drain's result on the claim
          -> waiter: durable waits (heartbeats when due) and a look at the claim each time, until the holder's
             result (adopted as this execution's own: it completes its own lifecycle action from it), its own
             deadline, or the holder stops renewing (then this execution takes the claim over and drains)

The first look is the cordon's write (drain_steps.cordon_step takes or joins the claim in it); a caller whose job
carries none gets a "drain-claim" step. The waiter's later looks are steps of their own.
Dry runs change nothing, so they take no claim. The gates (gates.py) run in every execution after its drain result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from aws_durable_execution_sdk_python import DurableContext

from drain_orchestrator import deadlines
from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.drain_claim import Role
from drain_orchestrator.outcome import InstanceOutcome, Result
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.claim_steps import claim_step, settle_step
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.pace import Pace, step_config
from drain_orchestrator.workflow.results import ClaimCheck, ClaimSettled, StepFault

Drained = tuple[Result, DrainReport | None, StepFault | None]


def one_drain(
    ctx: DurableContext, job: DrainJob, pace: Pace, summary: InstanceOutcome, passes: Callable[[DrainJob], Drained]
) -> Drained:
    if runtime.wsettings().dry_run:
        return passes(job)
    deadline = job.plan.deadline
    check = job.cordon_claim
    if check is None:
        check = pace.retrying("drain-claim", lambda lb: claim_step(job, lb), ClaimCheck, deadline)
    n = 0
    while True:
        if check.gone:
            return Result.NODE_GONE, None, None
        if check.fault is not None and n == 0:
            return Result.FAILED, None, check.fault
        if check.role == Role.HOLDER and check.fault is None:
            if check.took_over:
                summary.took_over_from = check.took_over
            # the holder counts the pods it evicts: one execution evicts them, so none is counted twice
            holder = replace(job, claimed=True, counts_pods=True, claimed_at=check.now, claim_earliest=check.earliest)
            result, report, error = passes(holder)
            if result is not Result.CLAIM_LOST:  # the claim was taken over: this holder was too slow to renew
                settled: ClaimSettled = ctx.step(
                    settle_step(job, result), name="drain-settle", config=step_config(ClaimSettled)
                )
                pace.absorb(settled)
                if settled.waiters:
                    summary.waiters = settled.waiters
                summary.phase_held = settled.phase
                return result, report, error
            check = replace(check, role=Role.WAITER.value)
        if check.role == Role.SETTLED:
            summary.drained_by = check.holder
            return Result(str(check.verdict)), None, None
        if check.holder is not None:
            summary.drained_by = check.holder
        if pace.now >= deadline:
            message = f"the node's drain (execution {check.holder}) had no verdict by this execution's deadline"
            return Result.DEADLINE_MISSED, None, StepFault(step="drain-claim", kind="deadline", message=message)
        pace.wait(float(deadlines.recheck_delay(n, runtime.wsettings())), f"drain-wait-{n}", deadline)
        seen: ClaimCheck = ctx.step(
            claim_step(job, pace.last_beat), name=f"drain-look-{n}", config=step_config(ClaimCheck)
        )
        pace.absorb(seen)
        if seen.fault is None:  # a failed look: keep waiting on what was known, until the deadline
            check = seen
        n += 1

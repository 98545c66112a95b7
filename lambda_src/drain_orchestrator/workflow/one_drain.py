"""One drain per node: the execution holding the node's drain claim drains, the others wait for its verdict.

    claim -> holder: drain passes (renewing the claim each pass, to the earliest deadline of all waiting), then
             write the drain's result on the claim
          -> waiter: durable waits (heartbeats when due) and a look at the claim each time, until the holder's
             result (adopted as this execution's own: it completes its own lifecycle action from it), its own
             deadline, or the holder stops renewing (then this execution takes the claim over and drains)

The first look is the cordon's write (drain_steps.cordon_step takes or joins the claim in it); a caller whose job
carries none gets a "drain-claim" step. The waiter's later looks are steps of their own.
Dry runs change nothing, so they take no claim. The gates (gates.py) run in every execution after its drain result.

The flow (drain_flow.py) asks ``OneDrain.turn`` until it answers with the job to drain as the holder, drains, and
hands the result to ``settle``; a holder whose claim was taken over (too slow to renew) goes back to waiting.
"""

from __future__ import annotations

from dataclasses import replace

from aws_durable_execution_sdk_python import DurableContext

from drain_orchestrator import deadlines
from drain_orchestrator.drain_claim import Role
from drain_orchestrator.outcome import InstanceOutcome, Result
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.checkpoint import StepFault, step_config
from drain_orchestrator.workflow.claim_steps import claim_step, settle_step
from drain_orchestrator.workflow.job import Drained, DrainJob
from drain_orchestrator.workflow.pace import Pace
from drain_orchestrator.workflow.results import ClaimCheck, ClaimSettled


class OneDrain:
    """One execution's part in the node's one drain: its look at the claim (the cordon's, or a step of its own),
    then ``turn`` and ``settle`` as the flow drains."""

    def __init__(self, ctx: DurableContext, job: DrainJob, pace: Pace, summary: InstanceOutcome) -> None:
        self.ctx, self.job, self.pace, self.summary = ctx, job, pace, summary
        self.deadline = job.plan.deadline
        self.n = 0  # the waiter's looks so far
        check = job.cordon_claim
        if check is None:
            check = pace.retrying("drain-claim", lambda lb: claim_step(job, lb), ClaimCheck, self.deadline)
        self.check = check

    def turn(self) -> DrainJob | Drained:
        """Wait (durably) until this execution holds the claim: the job to drain with; or the drain's end without
        draining (the holder's verdict, the node gone, this execution's deadline, its look failed)."""
        job, pace, summary = self.job, self.pace, self.summary
        while True:
            check = self.check
            if check.gone:
                summary.replaced(check.replaced_by)
                return Drained(Result.NODE_GONE)
            if check.fault is not None and self.n == 0:
                return Drained(Result.FAILED, None, check.fault)
            if check.role == Role.HOLDER and check.fault is None:
                if check.took_over:
                    summary.took_over_from = check.took_over
                # the holder counts the pods it evicts: one execution evicts them, so none is counted twice
                return replace(job, claimed=True, counts_pods=True, claimed_at=check.now, claim_earliest=check.earliest)
            if check.role == Role.SETTLED:
                summary.drained_by = check.holder
                return Drained(Result(str(check.verdict)))
            if check.holder is not None:
                summary.drained_by = check.holder
            if pace.now >= self.deadline:
                message = f"the node's drain (execution {check.holder}) had no verdict by this execution's deadline"
                return Drained(
                    Result.DEADLINE_MISSED, None, StepFault(step="drain-claim", kind="deadline", message=message)
                )
            pace.wait(
                float(deadlines.recheck_delay(self.n, runtime.wsettings())), f"drain-wait-{self.n}", self.deadline
            )
            seen: ClaimCheck = self.ctx.step(
                claim_step(job, pace.last_beat), name=f"drain-look-{self.n}", config=step_config(ClaimCheck)
            )
            pace.absorb(seen)
            if seen.fault is None:  # a failed look: keep waiting on what was known, until the deadline
                self.check = seen
            self.n += 1

    def settle(self, drained: Drained) -> bool:
        """The holder's drain ended: its result written on the claim for the waiters (True). False when the claim
        was taken over meanwhile (this holder was too slow to renew): back to waiting for the new holder's verdict."""
        if drained.result is Result.CLAIM_LOST:
            self.check = replace(self.check, role=Role.WAITER.value)
            return False
        settled: ClaimSettled = self.ctx.step(
            settle_step(self.job, drained.result), name="drain-settle", config=step_config(ClaimSettled)
        )
        self.pace.absorb(settled)
        if settled.waiters:
            self.summary.waiters = settled.waiters
        self.summary.phase_held = settled.phase
        return True

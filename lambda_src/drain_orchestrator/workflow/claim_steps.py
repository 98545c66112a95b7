"""Steps of the node's drain claim: take it or wait on it (one look), and settle it with the holder's verdict."""

from __future__ import annotations

import time

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator.drain_claim import Look, Role, claim_ttl
from drain_orchestrator.kube.errors import NodeGone, replacement_of
from drain_orchestrator.observability import logger
from drain_orchestrator.outcome import report_phase
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.heartbeat import HeartbeatKeeper
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.results import ClaimCheck, ClaimSettled
from drain_orchestrator.workflow.step_guard import fault_of


def ttl() -> float:
    ws = runtime.wsettings()
    # a held drain waits up to HELD_RECHECK_MAX_SECONDS between passes (workflow/hold_pace.py)
    return claim_ttl(ws.drain_pass_seconds, max(ws.recheck_max_seconds, ws.held_recheck_max_seconds))


@durable_step
def claim_step(step_ctx: StepContext, job: DrainJob, last_beat: float | None) -> ClaimCheck:
    from drain_orchestrator.kube.node_claim import look_at  # noqa: PLC0415

    with HeartbeatKeeper.of(job, last_beat) as hb:
        now = time.time()
        try:
            seen = look_at(runtime.kube(job.cluster), job.node, job.run_id, job.plan.deadline, now, ttl(), job.pin)
        except NodeGone as exc:
            replaced = replacement_of(exc)
            return ClaimCheck(now=now, gone=True, last_beat=hb.last_beat, hook_done=hb.hook_done, replaced_by=replaced)
        except Exception as exc:
            fault = fault_of("drain-claim", exc)
            return ClaimCheck(now=now, last_beat=hb.last_beat, hook_done=hb.hook_done, fault=fault)
    return check_of(job, seen, hb.last_beat, hb.hook_done)


def check_of(job: DrainJob, seen: Look, last_beat: float | None, hook_done: bool) -> ClaimCheck:
    """What a look at the claim found (claim_step's, or the cordon's write), logged as the flow will act on it."""
    claim = seen.claim
    if seen.took_over is not None:
        logger.warning(
            "drain claim taken over: its holder stopped renewing it",
            extra={"node": job.node, "previous_holder": seen.took_over, "run_id": job.run_id},
        )
    elif seen.role is Role.WAITER:
        logger.info(
            "node drained by another execution: waiting for its verdict",
            extra={"node": job.node, "holder": claim.holder, "earliest_deadline": claim.earliest},
        )
    return ClaimCheck(
        now=time.time(),
        role=seen.role.value,
        holder=claim.holder,
        verdict=claim.verdict if seen.role is Role.SETTLED else None,
        took_over=seen.took_over,
        last_beat=last_beat,
        hook_done=hook_done,
        earliest=claim.earliest,
    )


@durable_step
def settle_step(step_ctx: StepContext, job: DrainJob, result: str) -> ClaimSettled:
    """Best effort: waiters that never see a verdict take the claim over once it expires and drain themselves. The
    same write takes the report's phase claim for this result; a report with another result claims its own."""
    from drain_orchestrator.kube.node_claim import settle_claim  # noqa: PLC0415

    phase = report_phase(result)
    try:
        settled = settle_claim(runtime.kube(job.cluster), job.node, job.run_id, result, phase, job.pin)
    except NodeGone:
        return ClaimSettled(now=time.time())
    except Exception as exc:
        fault_of("drain-settle", exc)
        return ClaimSettled(now=time.time())
    claim = settled.claim
    waiters = 0 if claim is None else len(claim.deadlines) - 1
    held = phase if settled.phase_held else None
    return ClaimSettled(now=time.time(), settled=claim is not None, waiters=waiters, phase=held)

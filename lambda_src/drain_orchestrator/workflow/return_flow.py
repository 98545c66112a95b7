"""When the instance stays: the waits of a return to service and of a scheduled change's lifecycle, between the
steps of return_steps.py (docs/drain.md "When the instance stays").

    [scheduled change] step "change-record" before the window's wait, step "change-check" after it: a newer
        update that closed or rescheduled the change ends the execution "cancelled" before it cordons
    [closed update]    step "change-record", then step "return" at once: the node, if cordoned for that change
    after the cordon or the verdict, when the event's instance may stay (returns.return_case):
        wait "return-wait-N" (durable, no compute billed) -> step "return-look-N" -> ... -> step "return"

Every wait is computed from its steps' ``now``; a watch takes one look for a rebalance, a closed update or a
change that only a closed update ends, and for the others looks doubling from RECHECK_MIN_SECONDS to
returns.RETURN_POLL_MAX_SECONDS until returns.RETURN_WATCH_SECONDS (about 110 looks at most).
"""

from __future__ import annotations

import math

from aws_durable_execution_sdk_python import DurableContext
from aws_durable_execution_sdk_python.config import Duration

from drain_orchestrator.outcome import InstanceOutcome, Result
from drain_orchestrator.returns import (
    RETURN_WATCH_SECONDS,
    ReturnCase,
    first_look,
    max_polls,
    next_poll,
    return_case,
)
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.checkpoint import step_config
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.results import ChangeStanding, ReturnDone, ReturnLook
from drain_orchestrator.workflow.return_steps import change_step, return_look_step, return_step

# the results after which the node is still cordoned by this execution and its instance may still come back
WATCHED = (Result.CORDONED, Result.DRAINED, Result.DEADLINE_MISSED, Result.REFUSED, Result.GATE_HELD)


def case_of(job: DrainJob) -> ReturnCase | None:
    """The job's return case, None when nothing brings its node back (a rebalance with REBALANCE_RETURN_SECONDS 0)."""
    case = return_case(job.event)
    if case == "rebalance" and runtime.wsettings().rebalance_return == 0:
        return None
    return case


def change_goes_on(ctx: DurableContext, job: DrainJob, summary: InstanceOutcome, name: str) -> bool:
    """A scheduled change's update recorded on the node (step ``name``); False when a newer update closed or
    rescheduled it (the outcome says so, result ``cancelled``) or the node is gone. A step that failed lets the drain
    go on: the check guards against a drain nobody wants, and a drain the event asked for is the safe side."""
    seen: ChangeStanding = ctx.step(change_step(job), name=name, config=step_config(ChangeStanding))
    if seen.gone:
        summary.result = Result.NODE_GONE
        return False
    if seen.fault is not None or seen.standing == "current":
        return True
    summary.result = Result.CANCELLED
    summary.returned = {"status": "not-cordoned", "reason": f"change-{seen.standing}"}
    return False


def close_change(ctx: DurableContext, job: DrainJob, summary: InstanceOutcome) -> InstanceOutcome:
    """A closed update: recorded on the node, then the node returned if it was cordoned for that change."""
    seen: ChangeStanding = ctx.step(change_step(job), name="change-record", config=step_config(ChangeStanding))
    if seen.gone:
        summary.returned = {"status": "node-gone"}
        return summary
    if seen.standing == "superseded":  # a newer update that is not closed: its own execution decides
        summary.returned = {"status": "superseded", "reason": "change-superseded"}
        return summary
    done: ReturnDone = ctx.step(return_step(job, "change-closed", True), name="return", config=step_config(ReturnDone))
    summary.returned = _said(done, "change-closed")
    return summary


def watch(ctx: DurableContext, job: DrainJob, summary: InstanceOutcome, now: float) -> InstanceOutcome:
    """After the cordon or the verdict: wait for the node to be due back, then return it (or say why not)."""
    case = case_of(job)
    ws = runtime.wsettings()
    if case is None or ws.dry_run or not summary.cordoned or summary.result not in WATCHED:
        return summary
    at = first_look(job.event, case, ws.rebalance_return, now)
    since = job.event.window_start if job.event.window_start is not None else now
    started, n, polls = now, 0, max_polls(ws.recheck_min_seconds)
    while True:
        if at - now >= 1:
            ctx.wait(Duration.from_seconds(math.ceil(at - now)), name=f"return-wait-{n}")
            now = at
        seen: ReturnLook = ctx.step(
            return_look_step(job, case, since), name=f"return-look-{n}", config=step_config(ReturnLook)
        )
        now = seen.now
        if seen.fault is None and seen.verdict == "due":
            done: ReturnDone = ctx.step(return_step(job, seen.reason), name="return", config=step_config(ReturnDone))
            summary.returned = _said(done, seen.reason)
            return summary
        if seen.fault is None and seen.verdict == "stop":
            summary.returned = {"status": "kept", "reason": seen.reason}
            return summary
        if case in ("rebalance", "closed") and seen.fault is None:
            summary.returned = {"status": "kept", "reason": seen.reason}
            return summary
        # by the clock, and by the count of looks the clock allows (a replayed or fast-forwarded clock still ends)
        if now - started >= RETURN_WATCH_SECONDS or n + 1 >= polls:
            reason = seen.fault.message if seen.fault is not None else seen.reason
            summary.returned = {"status": "kept", "reason": f"gave up after {RETURN_WATCH_SECONDS} s: {reason}"}
            return summary
        at = now + next_poll(n, ws.recheck_min_seconds)
        n += 1


def _said(done: ReturnDone, reason: str) -> dict[str, object]:
    out: dict[str, object] = {"status": done.status, "reason": reason, "at": round(done.now, 3)}
    if done.fault is not None:
        out["error"] = done.fault.to_dict()
    if done.surge_restored:
        out["surge_restored"] = done.surge_restored
    return out

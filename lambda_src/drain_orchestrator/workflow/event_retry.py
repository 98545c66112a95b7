"""An event's step (before any instance's flow: no heartbeat to keep) retried with durable waits between attempts.

The instance's flow retries its own steps with the heartbeat kept (pace.Pace.retrying); this is the event's.
"""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext
from aws_durable_execution_sdk_python.config import Duration

from drain_orchestrator import deadlines
from drain_orchestrator.failures import RETRY_POLICIES, FailureKind
from drain_orchestrator.workflow.checkpoint import Checkpointed, StepFault, step_config


def retried[T: Checkpointed](
    ctx: DurableContext, make: Any, name: str, cls: type[T], until: float, *, first: T | None = None
) -> T:
    """An event's step (before any instance's flow: no heartbeat to keep) run as ``make()`` until it succeeds, its
    failure kind gives up, or ``until`` passes, with the kind's backoff as durable waits "<name>-backoff-N" in
    between. Returns the last result (fault set if it never succeeded). ``first``: the first attempt's result,
    when a step of another name made it (the admit step's decision); the retries are "<name>-retry-N"."""
    attempt, since = 0, None
    while True:
        label = name if attempt == 0 else f"{name}-retry-{attempt}"
        if attempt == 0 and first is not None:
            res: T = first
        else:
            res = ctx.step(make(), name=label, config=step_config(cls))
        fault: StepFault | None = getattr(res, "fault", None)
        if fault is None:
            return res
        policy = RETRY_POLICIES[FailureKind(fault.kind)]
        now: float = getattr(res, "now")  # noqa: B009 - every faulting result carries its time (step_guard)
        if policy.gives_up_after(attempt) or now >= until:
            return res
        since = now if since is None else since
        spacing = deadlines.loop_spacing(until - since, 1)
        seconds = deadlines.wait_seconds(now, policy.jittered(attempt, f"{label}@{now}", spacing), until, None)
        ctx.wait(Duration.from_seconds(seconds), name=f"{name}-backoff-{attempt}")
        attempt += 1

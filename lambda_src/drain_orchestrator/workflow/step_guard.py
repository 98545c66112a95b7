"""Inside a step: turn any failure into a typed `StepFault`, counted and logged, instead of an exception.

A failed step must not fail the execution before its verdict: the flow reads the fault and retries with a durable
wait (failures.RETRY_POLICIES) or takes the failure path. The fault is counted as ``Errors`` with reason
``<step>-failed`` so an unreachable API server or a revoked access entry shows on the dashboard at once, and as
``StepFailures`` (no dimension but the service), which an alarm can watch over every step at once.

`faults_as` does this for a whole step body: the body raises, the step returns its result type with ``now`` and
``fault`` set (and any fixed fields, e.g. ``outcome="failed"``). Exceptions a step handles on purpose (the node
gone, a best-effort part) stay explicit in its body; `fault_of` is for the steps whose fault result needs more
than fixed fields.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from drain_orchestrator.failures import kind_of
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.workflow.checkpoint import Checkpointed, StepFault

MESSAGE_LIMIT = 300


def fault_of(step: str, exc: Exception) -> StepFault:
    kind = kind_of(exc)
    metric("Errors", reason=f"{step}-failed")
    metric("StepFailures")  # one series over every step: what the StepsFailing alarm watches (docs/runbook.md)
    log = logger.exception if kind.value == "unexpected" else logger.warning
    log(
        f"{step} step failed",
        extra={"error_kind": kind.value, "error_type": type(exc).__name__, "error": str(exc)[:MESSAGE_LIMIT]},
    )
    return StepFault(step=step, kind=kind.value, message=str(exc)[:MESSAGE_LIMIT])


def faults_as[**P, R: Checkpointed](
    step: str, result: type[R], **fixed: Any
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``@faults_as("gate-volumes", VolumesCheck)`` under ``@durable_step``: an exception from the body becomes
    ``VolumesCheck(now=<time>, fault=fault_of("gate-volumes", exc), **fixed)``. ``step`` names the fault and its
    metric reason, not the durable step (the flow names that)."""
    make: Callable[..., R] = result

    def wrap(body: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(body)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return body(*args, **kwargs)
            except Exception as exc:
                return make(now=time.time(), fault=fault_of(step, exc), **fixed)

        return guarded

    return wrap

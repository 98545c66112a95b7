"""Inside a step: turn any failure into a typed `StepFault`, counted and logged, instead of an exception.

A failed step must not fail the execution before its verdict: the flow reads the fault and retries with a durable
wait (failures.RETRY_POLICIES) or takes the failure path. The fault is counted as ``Errors`` with reason
``<step>-failed`` so an unreachable API server or a revoked access entry shows on the dashboard at once.
"""

from __future__ import annotations

from drain_orchestrator.failures import kind_of
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.workflow.results import StepFault

MESSAGE_LIMIT = 300


def fault_of(step: str, exc: Exception) -> StepFault:
    kind = kind_of(exc)
    metric("Errors", reason=f"{step}-failed")
    log = logger.exception if kind.value == "unexpected" else logger.warning
    log(
        f"{step} step failed",
        extra={"error_kind": kind.value, "error_type": type(exc).__name__, "error": str(exc)[:MESSAGE_LIMIT]},
    )
    return StepFault(step=step, kind=kind.value, message=str(exc)[:MESSAGE_LIMIT])

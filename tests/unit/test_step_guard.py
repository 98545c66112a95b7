"""A guarded step body raises; the step returns its typed result with the fault, as checkpointed."""

from __future__ import annotations

from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.workflow.checkpoint import StepSerDes
from drain_orchestrator.workflow.results import BeatOutcome, VolumesCheck
from drain_orchestrator.workflow.step_guard import faults_as


@faults_as("gate-volumes", VolumesCheck)
def _volumes(fail: Exception | None) -> VolumesCheck:
    if fail is not None:
        raise fail
    return VolumesCheck(now=1.0, attached=["csi-1"])


@faults_as("heartbeat", BeatOutcome, outcome="failed")
def _beat() -> BeatOutcome:
    raise RuntimeError("boom " + "x" * 400)


def test_a_body_that_returns_is_left_alone() -> None:
    assert _volumes(None) == VolumesCheck(now=1.0, attached=["csi-1"])


def test_an_api_failure_becomes_the_results_fault_with_its_kind() -> None:
    got = _volumes(ApiError(FailureKind.UNAVAILABLE, "kubernetes", "apiserver unreachable"))
    assert got.fault is not None
    assert (got.fault.step, got.fault.kind, got.fault.message) == (
        "gate-volumes",
        "unavailable",
        "kubernetes: apiserver unreachable",
    )
    assert got.attached == [] and got.now > 0


def test_fixed_fields_are_set_and_the_message_is_clipped() -> None:
    got = _beat()
    assert got.outcome == "failed"
    assert got.fault is not None and got.fault.kind == "unexpected" and len(got.fault.message) == 300
    serdes = StepSerDes(BeatOutcome)
    assert serdes.deserialize(serdes.serialize(got, None), None) == got  # type: ignore[arg-type]


def test_the_wrapped_function_keeps_its_name() -> None:
    assert _volumes.__name__ == "_volumes"  # durable_step records it as the step's function name

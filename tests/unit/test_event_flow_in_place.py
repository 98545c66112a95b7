"""An event's one instance runs in the execution's own context (event_flow._in_place): a failure of its flow ends
the execution as a failed branch of the map did, and the SDK's own signals (a suspension for a durable wait, an
execution-terminal error) pass through untouched."""

from __future__ import annotations

from typing import Any

import pytest
from aws_durable_execution_sdk_python.exceptions import ExecutionError, SuspendExecution

from drain_orchestrator.outcome import InstanceOutcome
from drain_orchestrator.workflow import event_flow


def _raising(exc: BaseException) -> Any:
    def branch(ctx: Any, item: dict[str, Any], index: int, items: Any) -> dict[str, Any]:
        raise exc

    return branch


def test_a_failed_flow_fails_the_execution_as_a_failed_branch_did(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_flow, "_instance_branch", _raising(RuntimeError("boom " + "x" * 300)))
    with pytest.raises(event_flow.WorkflowError) as caught:
        event_flow._in_place(None, {})  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("1 of 1 instance workflows failed: boom x") and len(message) < 260, message


@pytest.mark.parametrize("signal", [SuspendExecution("a durable wait"), ExecutionError("not deterministic")])
def test_the_sdks_signals_pass_through(monkeypatch: pytest.MonkeyPatch, signal: BaseException) -> None:
    monkeypatch.setattr(event_flow, "_instance_branch", _raising(signal))
    with pytest.raises(type(signal)):
        event_flow._in_place(None, {})  # type: ignore[arg-type]


def test_the_outcome_is_the_branchs(monkeypatch: pytest.MonkeyPatch) -> None:
    said = {"instance_id": "i-0aaaaaaaaaaaaaaa1", "cluster": "blue", "node": "n", "decision": "d", "action": "drain"}
    monkeypatch.setattr(event_flow, "_instance_branch", lambda ctx, item, i, items: said)
    assert event_flow._in_place(None, {}).to_dict() == InstanceOutcome.from_dict(said).to_dict()  # type: ignore[arg-type]

"""The pure parts of an approval: the decision payload, how long the approval stays open, what each decision does
to the lifecycle action, and how the CLI tells an id that names no open approval."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from drain_orchestrator.cli.approve import ApprovalGone, decision_of, send_decision
from drain_orchestrator.outcome import lifecycle_result
from drain_orchestrator.workflow.approval import (
    MARGIN_SECONDS,
    RESULTS,
    Choice,
    DecisionError,
    OperatorDecision,
    callback_timeout,
)
from drain_orchestrator.workflow.held import Held


def test_a_decision_round_trips_through_its_payload() -> None:
    sent = decision_of("force", "arn:aws:iam::1:user/alice", 1_780_000_000.7)
    assert sent == OperatorDecision("force", "arn:aws:iam::1:user/alice", "2026-05-28T20:26:40Z")
    assert OperatorDecision.parse(sent.payload()) == sent
    assert OperatorDecision.parse(sent.payload().decode()) == sent


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, "not JSON"),
        ("{", "not JSON"),
        ('["force"]', "expected a JSON object"),
        ('{"decision": "delete", "by": "a", "at": "t"}', "'decision' must be one of force, continue, abandon, wait"),
        ('{"decision": "wait", "by": "", "at": "t"}', "'by' and 'at' must be non-empty strings"),
        ('{"decision": "wait", "by": "a"}', "'by' and 'at'"),
    ],
)
def test_a_payload_that_is_not_a_decision_says_why(raw: str | None, expected: str) -> None:
    with pytest.raises(DecisionError, match="decision payload") as err:
        OperatorDecision.parse(raw)
    assert expected in str(err.value)


def test_the_approval_closes_the_margin_before_the_deadline() -> None:
    assert callback_timeout(1000.0, 1000.0 + 600) == 600 - MARGIN_SECONDS
    assert callback_timeout(1000.0, 1000.0 + MARGIN_SECONDS + 1) == 1
    assert callback_timeout(1000.0, 1000.0 + MARGIN_SECONDS) is None  # no time left to ask


def test_each_decision_completes_the_lifecycle_action_as_said() -> None:
    assert lifecycle_result(RESULTS[Choice.CONTINUE], "ABANDON") == "CONTINUE"
    assert lifecycle_result(RESULTS[Choice.ABANDON], "CONTINUE") == "ABANDON"
    assert lifecycle_result("drained", "ABANDON") == "CONTINUE"
    assert lifecycle_result("deadline-missed", "ABANDON") == "ABANDON"


def test_the_held_notice_carries_the_approval_id_and_the_command() -> None:
    held = Held(1000.0, 700.0, ["a/p"], ["web"], ["pdb"], "force-delete", 5000.0, approval_id="Y2I=")
    fields = held.fields()
    assert fields["approval_id"] == "Y2I="
    assert fields["approve"] == "drain-orchestrator approve Y2I= --force|--continue|--abandon|--wait"
    assert "approval_id" not in Held(1000.0, 700.0, [], [], ["pdb"], "stop", 5000.0).fields()


class _Refusing:
    def __init__(self, code: str) -> None:
        self.code = code

    def send_durable_execution_callback_success(self, *, CallbackId: str, Result: bytes) -> Any:
        raise ClientError({"Error": {"Code": self.code, "Message": "no such callback"}}, "Send")


@pytest.mark.parametrize("code", ["ResourceNotFoundException", "CallbackTimeoutException"])
def test_an_unknown_or_expired_id_is_an_approval_gone(code: str) -> None:
    with pytest.raises(ApprovalGone, match=code):
        send_decision(_Refusing(code), "eA==", decision_of("wait", "me", 0.0))


def test_other_failures_are_not_mistaken_for_a_gone_approval() -> None:
    with pytest.raises(ClientError):
        send_decision(_Refusing("AccessDeniedException"), "eA==", decision_of("wait", "me", 0.0))


def test_approve_needs_exactly_one_decision(capsys: pytest.CaptureFixture[str]) -> None:
    from drain_orchestrator.cli import main

    for argv in (["approve", "eA=="], ["approve", "eA==", "--force", "--wait"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    assert "one of the arguments --force --continue --abandon --wait is required" in capsys.readouterr().err
    assert main(["approve", " ", "--wait", "--as", "me"]) == 2
    assert "ID: expected the approval_id" in capsys.readouterr().err

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
    sent = decision_of("force", "arn:aws:iam::1:user/alice", 1_780_000_000.7, "ip-10-0-1-5")
    assert sent == OperatorDecision("force", "arn:aws:iam::1:user/alice", "2026-05-28T20:26:40Z", "ip-10-0-1-5")
    assert OperatorDecision.parse(sent.payload()) == sent
    assert OperatorDecision.parse(sent.payload().decode()) == sent
    with_event = decision_of("wait", "me", 0.0, "n1", "ev-1")
    assert OperatorDecision.parse(with_event.payload()) == with_event


def test_a_decision_is_for_its_node_and_event_only() -> None:
    decision = decision_of("force", "me", 0.0, "ip-10-0-1-5")
    assert decision.mismatch("ip-10-0-1-5", "ev-1") is None  # no event named: the node binds it
    assert decision.mismatch("ip-10-0-9-9", "ev-1") == (
        "the decision names node 'ip-10-0-1-5'; this drain is node 'ip-10-0-9-9'"
    )
    named = decision_of("force", "me", 0.0, "ip-10-0-1-5", "ev-1")
    assert named.mismatch("ip-10-0-1-5", "ev-1") is None
    assert named.mismatch("ip-10-0-1-5", "ev-2") == "the decision names event 'ev-1'; this drain is event 'ev-2'"


def test_a_decision_in_the_format_without_a_node_is_refused_naming_the_fix() -> None:
    """What a command line of an earlier release sends during an upgrade: refused (invalid), not a crash."""
    with pytest.raises(DecisionError) as err:
        OperatorDecision.parse('{"decision": "force", "by": "arn:aws:iam::1:user/alice", "at": "2026-05-28T20:26:40Z"}')
    assert "'node' missing" in str(err.value) and "--node NODE" in str(err.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, "not JSON"),
        ("{", "not JSON"),
        ('["force"]', "expected a JSON object"),
        ('{"decision": "delete", "by": "a", "at": "t"}', "'decision' must be one of force, continue, abandon, wait"),
        ('{"decision": "wait", "by": "", "at": "t"}', "'by' and 'at' must be non-empty strings"),
        ('{"decision": "wait", "by": "a"}', "'by' and 'at'"),
        ('{"decision": "wait", "by": "a", "at": "t", "node": ""}', "'node' missing"),
        ('{"decision": "wait", "by": "a", "at": "t", "node": "n", "event_id": 7}', "'event_id' must be a string"),
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
    held = Held(1000.0, 700.0, ["a/p"], ["web"], ["pdb"], "force-delete", 5000.0, approval_id="Y2I=", node="n1")
    fields = held.fields()
    assert fields["approval_id"] == "Y2I="
    assert fields["approve"] == "drain-orchestrator approve Y2I= --node n1 --force|--continue|--abandon|--wait"
    assert "approval_id" not in Held(1000.0, 700.0, [], [], ["pdb"], "stop", 5000.0).fields()


class _Refusing:
    def __init__(self, code: str) -> None:
        self.code = code

    def send_durable_execution_callback_success(self, *, CallbackId: str, Result: bytes) -> Any:
        raise ClientError({"Error": {"Code": self.code, "Message": "no such callback"}}, "Send")


@pytest.mark.parametrize("code", ["ResourceNotFoundException", "CallbackTimeoutException"])
def test_an_unknown_or_expired_id_is_an_approval_gone(code: str) -> None:
    with pytest.raises(ApprovalGone, match=code):
        send_decision(_Refusing(code), "eA==", decision_of("wait", "me", 0.0, "n1"))


def test_other_failures_are_not_mistaken_for_a_gone_approval() -> None:
    with pytest.raises(ClientError):
        send_decision(_Refusing("AccessDeniedException"), "eA==", decision_of("wait", "me", 0.0, "n1"))


def test_approve_needs_exactly_one_decision(capsys: pytest.CaptureFixture[str]) -> None:
    from drain_orchestrator.cli import main

    for argv in (["approve", "eA==", "--node", "n1"], ["approve", "eA==", "--node", "n1", "--force", "--wait"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    assert "one of the arguments --force --continue --abandon --wait is required" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["approve", "eA==", "--wait"])
    assert exit_.value.code == 2 and "the following arguments are required: --node" in capsys.readouterr().err
    assert main(["approve", " ", "--node", "n1", "--wait", "--as", "me"]) == 2
    assert "ID: expected the approval_id" in capsys.readouterr().err
    assert main(["approve", "eA==", "--node", " ", "--wait", "--as", "me"]) == 2
    assert "--node: expected the held notification's node" in capsys.readouterr().err


class _Answered:
    """A callback already answered with ``raw``, as the SDK hands it to the look step."""

    def __init__(self, raw: str) -> None:
        self.raw = raw

    def result(self) -> str:
        return self.raw


@pytest.mark.parametrize(
    ("raw", "state", "message"),
    [
        (decision_of("force", "me", 0.0, "n1").payload().decode(), "decided", ""),
        (
            decision_of("force", "me", 0.0, "n2").payload().decode(),
            "invalid",
            "refused: the decision names node 'n2'; this drain is node 'n1'",
        ),
        (
            decision_of("force", "me", 0.0, "n1", "ev-other").payload().decode(),
            "invalid",
            "refused: the decision names event 'ev-other'; this drain is event 'ev-1'",
        ),
        (
            '{"decision": "force", "by": "me", "at": "2026-05-28T20:26:40Z"}',
            "invalid",
            "decision payload: 'node' missing",
        ),
    ],
)
def test_the_look_refuses_a_decision_for_another_drain_or_in_the_format_without_a_node(
    raw: str, state: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from drain_orchestrator.workflow.approval import look_step

    seen = look_step(_Answered(raw), "n1", "ev-1")(None)
    assert (seen.state, seen.message[: len(message)]) == (state, message)
    assert (seen.decision is not None) == (state == "decided" or "names" in message)
    counted = '"approval-refused"' in capsys.readouterr().out  # Errors, reason approval-refused: once per refusal
    assert counted == (state == "invalid")

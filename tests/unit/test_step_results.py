"""Step results survive the checkpoint: serialized by the workflow's serdes and read back equal."""

from __future__ import annotations

from drain_orchestrator.drain.report import BlockedPod, DrainReport
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.workflow.checkpoint import RunSettings, StepFault, StepSerDes
from drain_orchestrator.workflow.event_flow import Decided, Parsed
from drain_orchestrator.workflow.results import (
    BeatOutcome,
    ClaimCheck,
    Completion,
    Cordoned,
    DrainPlan,
    Located,
    PassOutcome,
    ReadyCheck,
    Reported,
)

FAULT = StepFault(step="drain-pass", kind="unavailable", message="apiserver unreachable")
DECISION = Decision("i-0123456789abcdef0", True, "blue", Reason.OWNED_INSTANCE_TAG, "drain", "ip-10-0-0-1.ec2.internal")


def _round_trip(value: object) -> object:
    serdes = StepSerDes(type(value))  # type: ignore[arg-type]
    return serdes.deserialize(serdes.serialize(value, None), None)  # type: ignore[arg-type]


def test_every_result_type_round_trips() -> None:
    report = DrainReport(node="n1", evicted=["a/b"], blocked=[BlockedPod("a/c", ["a/pdb"], "429")], passes=2)
    values = [
        RunSettings(4, False, "run"),
        DrainPlan(deadline=2.0, completion_deadline=3.0, heartbeat_interval=10, now=1.0),
        Located(DECISION, 1.0, last_beat=0.5, hook_done=False, fault=None),
        Located(DECISION, 1.0, fault=FAULT),
        Cordoned(now=1.0, cordoned=True, changed=True),
        Cordoned(now=1.0, gone=True),
        Cordoned(now=1.0, cordoned=True, claim=ClaimCheck(now=1.0, role="holder", holder="run", earliest=2.0)),
        PassOutcome(now=1.0, report=report, last_beat=0.9),
        PassOutcome(now=1.0, fault=FAULT, pod_ips=["10.0.0.7"]),
        PassOutcome(now=1.0, fault=FAULT),
        PassOutcome(now=1.0, report=report, held=True, queued=True, wake_at=40.0),
        BeatOutcome("recorded", 1.0),
        BeatOutcome("failed", 1.0, FAULT),
        Completion("completed", "CONTINUE", 1.0),
        Reported(duration=3.5, notified=True, now=1.0),
        ReadyCheck(now=1.0, node="n1", ready=True, heartbeat_interval=100),
        Parsed(event={"kind": "rebalance"}),
        Parsed(ignored="unsupported", message="why"),
        Decided(now=1.0, assessments=[{"decision": DECISION.to_dict(), "facts": None}]),
        Decided(now=1.0, fault=FAULT),
    ]
    for value in values:
        assert _round_trip(value) == value, value


def test_a_pass_checkpointed_before_passes_could_be_queued_replays_as_not_queued() -> None:
    """A drain in flight across an upgrade replays its passes' checkpoints, written without ``queued``."""
    written = PassOutcome(now=1.0, held=True, wake_at=40.0).to_dict()
    written.pop("queued")
    replayed = PassOutcome.from_dict(written)
    assert replayed.held and not replayed.queued and replayed.wake_at == 40.0

"""The identity of the Node object a drain acts on (node_identity.py): what matches, what a partial identity (a
drain located before identities were recorded) accepts and learns, and checkpoints of either kind read back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.node_identity import NodeIdentity, instance_id_from_provider_id
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.workflow.checkpoint import StepSerDes
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.results import ClaimCheck, Cordoned, DrainPlan, Located, PassOutcome

IID = "i-0123456789abcdef0"
PID = f"aws:///us-east-1a/{IID}"
DECISION = Decision(IID, True, "blue", Reason.OWNED_INSTANCE_TAG, "drain", "ip-10-0-0-1.ec2.internal")


def _node(uid: str, provider_id: str | None = PID) -> dict[str, Any]:
    return {"metadata": {"name": "ip-10-0-0-1.ec2.internal", "uid": uid}, "spec": {"providerID": provider_id}}


@pytest.mark.parametrize(
    ("provider_id", "expected"),
    [
        ("aws:///us-east-1a/i-0abc12345", "i-0abc12345"),
        ("aws:////i-0abc12345", "i-0abc12345"),
        ("i-0abc12345", "i-0abc12345"),
        ("aws:///us-east-1a/fargate-10.0.1.2", None),
        ("", None),
        (None, None),
    ],
)
def test_provider_id_parsing(provider_id: str | None, expected: str | None) -> None:
    assert instance_id_from_provider_id(provider_id) == expected


def test_a_node_is_the_located_one_only_with_its_uid_and_provider_id() -> None:
    located = NodeIdentity.of(_node("uid-1"))
    assert located == NodeIdentity("uid-1", PID, IID)
    assert located.matches(_node("uid-1"))
    assert not located.matches(_node("uid-2"))  # registered again under the name: another object
    assert not located.matches(_node("uid-1", "aws:///us-east-1a/i-0fffffffffffffff0"))
    assert located.matches(_node("uid-1", None))  # a providerID not (yet) set contradicts nothing


def test_an_identity_of_the_instance_alone_refuses_another_instances_node_and_learns_the_uid() -> None:
    legacy = NodeIdentity(instance_id=IID)
    assert not legacy.complete
    assert legacy.matches(_node("uid-1")) and legacy.matches(_node("uid-2"))
    assert not legacy.matches(_node("uid-3", "aws:///us-east-1b/i-0aaaaaaaaaaaaaaa0"))
    learned = legacy.learned(_node("uid-1"))
    assert learned == NodeIdentity("uid-1", PID, IID) and learned.complete
    assert not learned.matches(_node("uid-2"))


def test_the_replacement_is_described_by_what_is_known() -> None:
    assert NodeIdentity("u", PID, IID).describe() == f"uid u, providerID {PID}"
    assert NodeIdentity(instance_id=IID).describe() == f"instance {IID}"
    assert NodeIdentity().describe() == "unknown"


def _round_trip(value: Any) -> Any:
    serdes = StepSerDes(type(value))
    return serdes.deserialize(serdes.serialize(value, None), None)  # type: ignore[arg-type]


def test_results_carrying_identities_round_trip() -> None:
    ident, other = NodeIdentity("uid-1", PID, IID), NodeIdentity("uid-2", None, None)
    for value in (
        Located(DECISION, 1.0, identity=ident),
        Cordoned(now=1.0, gone=True, replaced_by=other),
        PassOutcome(now=1.0, report=DrainReport(node="n1"), identity=ident),
        PassOutcome(now=1.0, gone=True, replaced_by=other),
        ClaimCheck(now=1.0, gone=True, replaced_by=other),
    ):
        assert _round_trip(value) == value, value


def test_a_checkpoint_written_before_identities_were_recorded_drains_the_instances_node() -> None:
    """The previous release's Located and PassOutcome carry no identity: read back, the drain is pinned to any Node
    of its instance until a pass learns the UID."""
    old_located = {"decision": DECISION.to_dict(), "now": 1.0, "last_beat": None, "hook_done": False, "fault": None}
    loc = StepSerDes(Located).deserialize(_json(old_located), None)  # type: ignore[arg-type]
    assert loc.identity is None
    old_pass = {"now": 2.0, "report": None, "gone": False, "fault": None, "held": True, "pod_ips": None}
    assert StepSerDes(PassOutcome).deserialize(_json(old_pass), None).identity is None  # type: ignore[arg-type]
    event = Interruption("asg-terminate", "e", 1.0, "us-east-1", "1", (IID,), None, "EC2 Instance-terminate")
    job = DrainJob(event, loc.decision, DrainPlan(9.0, 9.0, None, 1.0), "run", identity=loc.identity)
    assert job.pin == NodeIdentity(instance_id=IID)
    located = DrainJob(event, DECISION, DrainPlan(9.0, 9.0, None, 1.0), "run", identity=NodeIdentity("u", PID, IID))
    assert located.pin == NodeIdentity("u", PID, IID)


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data)

"""The rules of a return to service (returns.py): which events may bring their node back, whose cordon a return may
undo, and when a watch says the node is back. Pure."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from drain_orchestrator.drain_claim import NodeClaim
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.returns import (
    ANN_RETURN,
    RETURN_POLL_MAX_SECONDS,
    NodeState,
    ReturnMark,
    cordon_mark,
    cordoned_by_another,
    look,
    max_polls,
    may_return,
    pending_return,
    return_case,
)

MINE = ReturnMark("run-a", "ev-a", "rebalance", 100.0)


def _event(kind: str, **kw: Any) -> Interruption:
    base = Interruption(kind, "ev", 0.0, "us-east-1", "1", ("i-0123456789abcdef0",), None, "dt")  # type: ignore[arg-type]
    return replace(base, **kw)


@pytest.mark.parametrize(
    ("event", "case"),
    [
        (_event("rebalance"), "rebalance"),
        (_event("scheduled-change", event_type_code="AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED"), "reboot"),
        (_event("scheduled-change", event_type_code="AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED"), "reboot"),
        (_event("scheduled-change", event_type_code="AWS_EC2_SYSTEM_MAINTENANCE_EVENT"), "maintenance"),
        (_event("scheduled-change", event_type_code="AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"), "closed"),
        (_event("spot-interruption", instance_action="stop"), "restart"),
        (_event("spot-interruption", instance_action="hibernate"), "restart"),
        (_event("spot-interruption", instance_action="terminate"), None),
        (_event("state-change", state="stopping"), "restart"),
        (_event("state-change", state="shutting-down"), None),
        (_event("asg-terminate"), None),
        (_event("capacity-reservation-interruption"), None),
    ],
)
def test_only_events_whose_instance_may_stay_have_a_return(event: Interruption, case: str | None) -> None:
    assert return_case(event) == case


def _node(*, unschedulable: bool, mark: ReturnMark | None = None, boot: str = "b1") -> dict[str, Any]:
    annotations = {} if mark is None else {ANN_RETURN: mark.to_json()}
    return {
        "metadata": {"annotations": annotations},
        "spec": {"unschedulable": unschedulable},
        "status": {"nodeInfo": {"bootID": boot}},
    }


def test_a_cordon_that_makes_the_node_unschedulable_marks_it_with_the_nodes_boot() -> None:
    change = cordon_mark(_node(unschedulable=False, boot="boot-1"), MINE)
    stored = ReturnMark.from_json(change[ANN_RETURN])
    assert stored == replace(MINE, boot="boot-1")


def test_an_operators_cordon_before_ours_gets_no_mark() -> None:
    assert cordon_mark(_node(unschedulable=True), MINE) == {}


def test_a_later_event_whose_instance_may_stay_takes_the_mark_over_and_one_that_goes_removes_it() -> None:
    earlier = ReturnMark("run-0", "ev-0", "rebalance", 50.0, "b1")
    taken = cordon_mark(_node(unschedulable=True, mark=earlier), MINE)
    assert ReturnMark.from_json(taken[ANN_RETURN]).run == "run-a"  # type: ignore[union-attr]
    assert cordon_mark(_node(unschedulable=True, mark=earlier), None) == {ANN_RETURN: None}
    assert cordon_mark(_node(unschedulable=False), None) == {}
    assert cordon_mark(_node(unschedulable=True, mark=MINE), MINE) == {}  # a replayed cordon changes nothing


def test_only_the_marks_execution_or_its_changes_closed_update_may_return_and_not_under_another_drain() -> None:
    annotations = {ANN_RETURN: MINE.to_json()}
    assert may_return({}, None, "run-a") == "not-ours"
    assert may_return(annotations, None, "run-b") == "superseded"
    assert may_return(annotations, None, "run-b", event="ev-a") is None
    assert may_return(annotations, None, "run-a") is None
    draining = NodeClaim(holder="run-c", expires=1e12, deadlines={"run-c": 1e12})
    assert may_return(annotations, draining, "run-a") == "claimed"
    assert may_return(annotations, replace(draining, verdict="drained"), "run-a") is None
    assert may_return(annotations, replace(draining, holder="run-a"), "run-a") is None


def _state(*, ready: bool = True, boot: str = "b1", since: float | None = None) -> NodeState:
    return NodeState(ready=ready, boot=boot, ready_since=since, mark=replace(MINE, boot="b1"))


def test_a_reboot_is_back_only_once_ready_with_a_new_boot() -> None:
    assert look("reboot", _state(), "run-a", "running", None, 200.0) == ("wait", "not-back")
    assert look("reboot", _state(ready=False, boot="b2"), "run-a", "running", None, 200.0) == ("wait", "not-back")
    assert look("reboot", _state(boot="b2"), "run-a", "running", None, 200.0) == ("due", "instance-back")
    assert look("reboot", _state(since=300.0), "run-a", "running", None, 200.0) == ("due", "instance-back")


def test_a_stopped_instance_is_back_once_ec2_runs_it_and_its_node_booted_again() -> None:
    assert look("restart", _state(boot="b2"), "run-a", "stopped", None, 100.0) == ("wait", "not-back")
    assert look("restart", _state(boot="b2"), "run-a", "running", None, 100.0) == ("due", "instance-back")
    assert look("restart", _state(boot="b2"), "run-a", "terminated", None, 100.0) == ("stop", "instance-terminated")


def test_a_rebalance_returns_at_its_time_unless_the_instance_is_going() -> None:
    assert look("rebalance", _state(), "run-a", "running", None, 0.0) == ("due", "no-interruption-followed")
    assert look("rebalance", _state(), "run-a", "stopping", None, 0.0) == ("stop", "instance-stopping")
    assert look("rebalance", None, "run-a", "running", None, 0.0) == ("stop", "node-gone")
    assert look("rebalance", _state(), "run-b", "running", None, 0.0) == ("stop", "superseded")


def test_a_closed_or_rescheduled_change_returns_the_node_once_ready() -> None:
    assert look("closed", _state(), "run-a", "running", "closed", 0.0) == ("due", "change-closed")
    assert look("reboot", _state(ready=False), "run-a", "running", "superseded", 0.0) == ("wait", "not-ready")
    assert look("closed", _state(), "run-a", "running", "current", 0.0) == ("stop", "change-goes-on")


def test_a_watch_takes_few_operations() -> None:
    assert max_polls(1) < 120
    assert max_polls(5) < 120
    assert RETURN_POLL_MAX_SECONDS <= 900


def test_an_unreadable_mark_returns_nothing() -> None:
    assert ReturnMark.from_json("{not json") is None
    assert may_return({ANN_RETURN: '{"run": "run-a"}'}, None, "run-a") == "not-ours"


def _managed(*entries: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"managedFields": [{"manager": m, "operation": "Update", "fieldsV1": f} for m, f in entries]}}


def test_a_cordon_set_again_by_another_tool_after_ours_is_not_ours_to_undo() -> None:
    unschedulable = {"f:spec": {"f:unschedulable": {}}}
    annotations = {"f:metadata": {"f:annotations": {"f:drain-orchestrator.io/return": {}}}}
    ours_only = _managed(("drain-orchestrator", {**unschedulable, **annotations}), ("kubelet", {"f:status": {}}))
    assert not cordoned_by_another(ours_only, "drain-orchestrator")
    # kubectl uncordon then kubectl cordon: the field moved to kubectl's manager, our annotations stay ours
    recordoned = _managed(("drain-orchestrator", annotations), ("kubectl-cordon", unschedulable))
    assert cordoned_by_another(recordoned, "drain-orchestrator")
    assert not cordoned_by_another({"metadata": {}}, "drain-orchestrator")
    state = NodeState(ready=True, boot="b", ready_since=None, mark=MINE, others_cordon=True)
    assert look("rebalance", state, "run-a", "running", None, 0.0) == ("stop", "cordoned-by-another")


def test_a_pending_return_says_when_its_watch_looks_again_and_on_what_terms() -> None:
    rebalance = ReturnMark("run-a", "ev-a", "rebalance", 100.0, case="rebalance")
    assert ReturnMark.from_json(rebalance.to_json()) == rebalance
    assert pending_return(rebalance, None, 3600)[0] == 3700.0
    reboot = ReturnMark("run-b", "arn-b", "scheduled-change", 100.0, case="reboot")
    assert pending_return(reboot, 5000.0, 3600) == (5000.0, "after its window, once Ready with a new boot")
    restart = ReturnMark("run-c", "ev-c", "spot-interruption", 100.0, case="restart")
    at, terms = pending_return(restart, None, 3600)
    assert at is None and "runs the instance again" in terms
    # a mark written without its case (hand-edited) still reads; nothing said about when
    assert pending_return(ReturnMark("run-d", "ev-d", "rebalance", 100.0), None, 3600) == (None, "")

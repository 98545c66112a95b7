"""A drain's timeline from a durable execution's history (cli/timeline.py, pure): the instance's own branch among
several, steps retried by the SDK, waits and callbacks still open, a failed execution. The shapes are the history
API's (GetDurableExecutionHistory); tests/integration/test_history_cli.py reads a real one from the bed."""

from __future__ import annotations

import json
from typing import Any

from drain_orchestrator.aws.executions import ExecutionSummary
from drain_orchestrator.cli.timeline import build

ARN = "arn:aws:lambda:eu-west-1:123456789012:function:drain:7/durable-execution/e1/x"
SUMMARY = ExecutionSummary(ARN, "e1", "RUNNING", "arn:aws:lambda:eu-west-1:123456789012:function:drain:7", 100.0, None)
A, B = "i-0aaaaaaaaaaaaaaa1", "i-0bbbbbbbbbbbbbbb2"


def _event(kind: str, at: float, op: str = "", name: str = "", parent: str | None = None, **details: Any) -> dict:
    event: dict[str, Any] = {"EventType": kind, "EventTimestamp": at, "Id": op, "Name": name}
    if parent:
        event["ParentId"] = parent
    if details:
        event[f"{kind}Details"] = details
    return event


def _result(value: Any) -> dict[str, Any]:
    return {"Result": {"Payload": json.dumps(value), "Truncated": False}}


def _decision(instance: str, owned: bool = True) -> dict[str, Any]:
    return {
        "decision": {"instance_id": instance, "owned": owned, "cluster": "blue" if owned else "green",
                     "reason": "owned-instance-tag" if owned else "other-cluster",
                     "action": "drain" if owned else "skip", "node": None},
        "facts": {"private_dns_name": f"ip-{instance}.internal"},
    }  # fmt: skip


def _history() -> list[dict[str, Any]]:
    """A Health event naming three instances: A drained in map item 0, another cluster's skipped, B in item 1, whose
    locate failed twice in the SDK before succeeding, then waits on a recheck and an approval."""
    parse = {"event": {"kind": "health-scheduled-change", "event_id": "ev-1", "instance_ids": [A, "i-0c", B]}}
    decided = {"now": 101.0, "assessments": [_decision(A), _decision("i-0c", owned=False), _decision(B)], "fault": None}
    return [
        _event("ExecutionStarted", 100.0, "x", "e1", ExecutionStartedDetails={"Input": {"Payload": "{}"}}),
        _event("StepStarted", 100.5, "s1", "parse"),
        _event("StepSucceeded", 100.6, "s1", "parse", **_result(parse)),
        _event("StepStarted", 101.0, "s2", "decide"),
        _event("StepSucceeded", 101.2, "s2", "decide", **_result(decided)),
        _event("ContextStarted", 101.3, "m", "instances"),
        _event("ContextStarted", 101.3, "c0", "map-item-0", "m"),
        _event("ContextStarted", 101.3, "c1", "map-item-1", "m"),
        _event("StepStarted", 101.4, "a-loc", "locate", "c0"),
        _event("StepSucceeded", 101.5, "a-loc", "locate", "c0", **_result({"decision": {"node": "node-a"}})),
        _event("StepStarted", 101.4, "b-loc", "locate", "c1"),
        _event("StepFailed", 101.6, "b-loc", "locate", "c1", Error={"ErrorType": "Boom", "ErrorMessage": "first"}),
        _event("StepStarted", 103.0, "b-loc", "locate", "c1"),
        _event("StepFailed", 103.1, "b-loc", "locate", "c1", Error={"ErrorType": "Boom", "ErrorMessage": "second"}),
        _event("StepStarted", 105.0, "b-loc", "locate", "c1"),
        _event("StepSucceeded", 105.2, "b-loc", "locate", "c1", **_result({"decision": {"node": "node-b"}})),
        _event("WaitStarted", 106.0, "b-w", "recheck-0", "c1", Duration=60, ScheduledEndTimestamp=166.0),
        _event("CallbackStarted", 106.5, "b-cb", "approval", "c1", CallbackId="cb-1"),
    ]


def test_the_instances_own_branch_is_shown_with_retries_and_open_waits() -> None:
    timeline = build(SUMMARY, _history(), B)
    assert timeline is not None
    assert (timeline.instance_id, timeline.node, timeline.kind, timeline.version) == (
        B,
        "node-b",
        "health-scheduled-change",
        "7",
    )
    rows = [(s.name, s.outcome, s.detail) for s in timeline.steps]
    assert rows == [
        ("execution", "started", "input ev-1, 3 instances"),
        ("parse", "health-scheduled-change", "3 instances"),
        ("decide", "drain", "owned-instance-tag, cluster blue"),
        ("locate", "found", "node node-b"),  # map item 1 is B's: the second instance acted on
        ("recheck-0", "waiting", "until 00:02:46Z"),
        ("approval", "waiting", ""),
    ]
    (locate,) = [s for s in timeline.steps if s.name == "locate"]
    assert locate.seconds is not None and round(locate.seconds, 1) == 3.8  # from the first attempt to the last
    assert timeline.verdict == "RUNNING"  # no end event yet
    # by node name, the same branch; A's is another
    by_node = build(SUMMARY, _history(), "node-b")
    assert by_node is not None and by_node.instance_id == B
    a = build(SUMMARY, _history(), f"ip-{A}.internal")
    assert a is not None and (a.instance_id, a.node) == (A, "node-a")
    assert [s.name for s in a.steps if s.name == "recheck-0"] == []


def test_an_instance_not_acted_on_and_a_stranger() -> None:
    skipped = build(SUMMARY, _history(), "i-0c")
    assert skipped is not None and skipped.node is None
    assert [(s.name, s.outcome) for s in skipped.steps if s.name == "decide"] == [("decide", "not acted on")]
    assert "locate" not in {s.name for s in skipped.steps}
    assert build(SUMMARY, _history(), "i-0ddddddddddddddd4") is None
    assert build(SUMMARY, _history(), "some-other-node") is None


def test_a_failed_execution_ends_with_its_error_and_a_step_fault_is_named() -> None:
    history = [
        *_history()[:5],
        _event("StepStarted", 102.0, "s3", "decide-retry-1"),
        _event("StepSucceeded", 102.1, "s3", "decide-retry-1",
               **_result({"now": 102.0, "assessments": [], "fault": {"kind": "throttled", "message": "Rate"}})),
        _event("ExecutionFailed", 103.0, "x", "e1", Error={"ErrorType": "WorkflowError", "ErrorMessage": "cannot"}),
    ]  # fmt: skip
    timeline = build(SUMMARY, history, A)
    assert timeline is not None
    assert [(s.name, s.outcome, s.detail) for s in timeline.steps[-2:]] == [
        ("decide-retry-1", "fault", "throttled: Rate"),
        ("execution", "failed", "WorkflowError cannot"),
    ]
    assert timeline.verdict == "failed"


def test_one_instance_admitted_and_drained_in_the_executions_own_context() -> None:
    """Settings, parse and decide as one "admit" step, and the event's one instance drained without a map: its
    steps are the execution's own, its node the one its begin step located."""
    admitted = {
        "settings": {"max_concurrent_nodes": 10, "dry_run": False, "run_id": "r1"},
        "parsed": {"event": {"kind": "asg-terminate", "event_id": "ev-2", "instance_ids": [A]}},
        "decided": {"now": 101.0, "assessments": [_decision(A)], "fault": None},
    }
    begun = {"plan": {"deadline": 900.0}, "located": {"decision": {"node": "node-a"}, "now": 101.5}}
    history = [
        _event("ExecutionStarted", 100.0, "x", "e1", ExecutionStartedDetails={"Input": {"Payload": "{}"}}),
        _event("StepStarted", 100.5, "s1", "admit"),
        _event("StepSucceeded", 101.0, "s1", "admit", **_result(admitted)),
        _event("StepStarted", 101.2, "s2", "begin"),
        _event("StepSucceeded", 101.6, "s2", "begin", **_result(begun)),
        _event("WaitStarted", 102.0, "w", "recheck-0", Duration=60, ScheduledEndTimestamp=162.0),
    ]
    for target in (A, "node-a", f"ip-{A}.internal"):
        timeline = build(SUMMARY, history, target)
        assert timeline is not None
        assert (timeline.instance_id, timeline.node, timeline.kind) == (A, "node-a", "asg-terminate")
        assert [(s.name, s.outcome) for s in timeline.steps] == [
            ("execution", "started"),
            ("admit", "drain"),
            ("begin", "found"),
            ("recheck-0", "waiting"),
        ]
    (admit,) = [s for s in build(SUMMARY, history, A).steps if s.name == "admit"]  # type: ignore[union-attr]
    assert admit.detail == "owned-instance-tag, cluster blue, run id r1"
    assert build(SUMMARY, history, "i-0ddddddddddddddd4") is None


def test_a_verdict_step_says_how_far_it_went() -> None:
    from drain_orchestrator.cli.step_notes import summary

    done = {
        "completion": {"outcome": "completed", "result": "CONTINUE", "now": 1.0},
        "surge": {"now": 1.1, "restored": ["Deployment ns/web: replicas 3"]},
        "reported": {"duration": 7.5, "notified": True, "now": 1.2},
    }
    assert summary("verdict", done, A) == (
        "notified",
        "lifecycle action completed CONTINUE, 1 surges restored, drain took 7.5 s",
    )
    fault = {"step": "complete-lifecycle", "kind": "throttled", "message": "Rate exceeded"}
    stopped = {"completion": {"outcome": "failed", "result": "CONTINUE", "now": 1.0, "fault": fault}}
    assert summary("verdict", stopped, A) == (
        "fault",
        "lifecycle action failed CONTINUE, complete-lifecycle: throttled: Rate exceeded",
    )

"""The execution's result stays far below the 256 KB checkpoint limit however many instances an event names."""

from __future__ import annotations

import json

from drain_orchestrator.interruption import Interruption
from drain_orchestrator.outcome import InstanceOutcome, Result
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.workflow.event_flow import NAMED, outcome


def test_the_result_names_the_first_instances_and_counts_them_all() -> None:
    ids = [f"i-{n:017x}" for n in range(9000)]
    event = Interruption("scheduled-change", "e", 0.0, "us-east-1", "1", tuple(ids), None, "AWS Health Event")
    report = {"evicted": 110, "blocked": [f"ns/pod-{n}" for n in range(110)], "remaining": 0}
    results = [
        InstanceOutcome(i, "blue", "n", "owned", "drain", result=Result.DRAINED, report=report) for i in ids[:3000]
    ]
    results += [InstanceOutcome(i, "blue", None, "owned", "skip") for i in ids[3000:4000]]
    others = [Decision(i, False, "green", Reason.OTHER_CLUSTER, "skip") for i in ids[4000:]]

    out = outcome(event, results, others)

    assert len(json.dumps(out)) < 100 * 1024
    assert out["instances"] == [r.to_dict() for r in results[:NAMED]] and out["not_acted_on"] == [
        d.to_dict() for d in others[:NAMED]
    ]
    assert out["instances_count"] == {"drained": 3000, "skip": 1000}
    assert out["not_acted_on_count"] == {"other-cluster": 5000}

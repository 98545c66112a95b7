"""DrainReport round-trips through JSON (the workflow checkpoints it) and folds passes together."""

from __future__ import annotations

import json

from drain_orchestrator.drain.report import BlockedPod, DrainReport, ForcedPod, PodReason


def test_report_round_trips_through_json() -> None:
    r = DrainReport(
        node="n",
        evicted=["a/b"],
        blocked=[BlockedPod("a/c", ["pdb"], "needs 2")],
        skipped=[PodReason("a/d", "mirror pod")],
        forced=[ForcedPod("a/e", 3, "deadline")],
        grace_sent={"a/b": 5},
    )
    again = DrainReport.from_dict(json.loads(json.dumps(r.to_dict())))
    assert again == r


def test_absorb_accumulates_actions_and_takes_latest_state() -> None:
    first = DrainReport(node="n", evicted=["a/x"], blocked=[BlockedPod("a/y", ["p"], "m")], api_calls=5)
    second = DrainReport(node="n", evicted=["a/y"], drained=True, api_calls=3)
    first.absorb(second)
    assert first.evicted == ["a/x", "a/y"]
    assert first.blocked == [] and first.drained
    assert (first.api_calls, first.passes) == (8, 2)

"""The soak checker's notification rule, on the notifications as the function publishes them (pure counting)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from testbed.soak import Execution
from testbed.soak_check import Expectation, _notifications


@dataclass
class _Run:
    """What _notifications reads of a soak: the plan's fleet and expectations, the executions, the faults."""

    nodes: dict[str, str]
    expect: Expectation
    executions: list[Execution]
    fault_counts: dict[str, int] = field(default_factory=dict)
    duplicate_finals: dict[str, int] = field(default_factory=dict)


def _run(**faults: int) -> _Run:
    expect = Expectation()
    expect.drained("node-a")
    return _Run({"i-a": "node-a"}, expect, [Execution("state-change", "i-a", 0.0)], dict(faults))


def _final(node: str | None, instance: str = "i-a") -> dict[str, Any]:
    return {"phase": "failed", "node": node, "instance_id": instance, "result": "failed"}


def test_a_drain_that_never_located_its_node_is_reported_for_its_instances_node() -> None:
    # the apiserver unreachable until the deadline: the step that finds the node never answered, node is null
    assert _notifications(_run(), [_final(None)]) == []  # type: ignore[arg-type]


def test_a_missing_or_extra_final_notification_is_still_a_violation() -> None:
    run = _run()
    missing = _notifications(run, [])  # type: ignore[arg-type]
    assert [v.invariant for v in missing] == ["exactly one final notification per drained node"]
    twice = _notifications(run, [_final("node-a"), _final(None)])  # type: ignore[arg-type]
    assert [v.detail for v in twice] == ["node-a (not deleted, 1 executions): 2"]
    stranger = _notifications(run, [_final("node-a"), _final(None, "i-unknown")])  # type: ignore[arg-type]
    assert [v.detail for v in stranger] == ["None: 1"]


def test_a_cordon_only_node_may_report_its_failure_but_nothing_else() -> None:
    # a rebalance recommendation cordons only: its cordon refused (the access entry revoked) is a failed verdict
    expect = Expectation()
    expect.cordoned("node-r")
    run = _Run({"i-r": "node-r"}, expect, [Execution("rebalance", "i-r", 0.0)])
    assert _notifications(run, [_final("node-r", "i-r")]) == []  # type: ignore[arg-type]
    assert _notifications(run, []) == []  # type: ignore[arg-type]  # a cordon that succeeded says nothing more
    completed = {**_final("node-r", "i-r"), "phase": "completed"}
    assert [v.detail for v in _notifications(run, [completed])] == ["node-r: 1"]  # type: ignore[arg-type]
    twice = _notifications(run, [_final("node-r", "i-r"), _final("node-r", "i-r")])  # type: ignore[arg-type]
    assert [v.detail for v in twice] == ["node-r: 2"]  # more failures than executions

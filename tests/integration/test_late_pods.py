"""Pods bound to a node after its cordon are drained, or named, never left behind (engine/node_view.py): the drain
calls a node drained only from a LIST sent once the control plane was seen to have the cordon (the node lifecycle
controller's unschedulable taint), a pod bound while the drain runs wakes it through its watch, and the late look
watches a drained node until ``settle_seconds`` after the cordon. The flow's late look, after the gates and before
the lifecycle action: test_lambda_late_pods.py.

The late pods are placed by the real scheduler (they tolerate the unschedulable taint: nothing else is placed on a
cordoned node once the scheduler saw the cordon) or name the node themselves (tests/integration/late_pods_support.py).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from drain_orchestrator.drain.options import LATE_LOOK_SECONDS
from tests.integration.drain_support import Lines, drain, drainer, pod_lists_of, pods_on
from tests.integration.late_pods_support import late_bindings

pytestmark = pytest.mark.integration

LATE_WARNING = "Warning: bound to the node after the cordon, drained too: "
# a pod bound while the drain watches the node's pods is evicted within this long of its creation, not at a later
# point in time the drain would have chosen (the slow pod's end, the late look's end); loose for a loaded host
WOKEN_WITHIN = 4.0


def named_late(report: Any) -> set[str]:
    """The pods the report's warnings name as bound after the cordon (one line per pass that found some)."""
    return {p for w in report.warnings if w.startswith(LATE_WARNING) for p in w[len(LATE_WARNING) :].split(", ")}


def assert_placed_and_drained_as_they_came(late: Any, scheduled: dict[str, float], names: list[str]) -> None:
    """The scheduler bound each of ``scheduled``, and each of ``names`` left within WOKEN_WITHIN of its creation."""
    for name in scheduled:
        assert late.placed_by_scheduler(name), f"{name} was not bound by the scheduler"
    for name in names:
        created, gone = late.after_cordon(name, late.created_at), late.after_cordon(name, late.gone_at)
        assert gone - created < WOKEN_WITHIN, f"{name}: created {created:.1f} s, gone {gone:.1f} s after the cordon"


def test_pods_bound_half_a_second_three_and_six_seconds_after_the_cordon_are_drained_while_the_drain_runs(
    testbed: Any, k8s: Any
) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.bare_pod("slow", node=a, grace=9)  # its grace keeps the drain on the node until 9 s after the cordon
    k8s.wait_for(lambda: len(pods_on(k8s, a)) == 1, timeout=30, what="the slow pod on the node")
    scheduled = {"late-0-5": 0.5, "late-3": 3.0, "late-6": 6.0}
    with late_bindings(k8s, a, scheduled=scheduled, named={"named-1": 1.0}) as late:
        with drainer(testbed) as kube:
            report = drain(kube, a, timeout=60, force=True)
        late.wait_gone()
    assert report.drained, report
    names = ["late-0-5", "late-3", "late-6", "named-1"]
    assert sorted(report.evicted) == sorted(f"{k8s.ns}/{n}" for n in [*names, "slow"])
    assert named_late(report) == {f"{k8s.ns}/{n}" for n in names}
    assert_placed_and_drained_as_they_came(late, scheduled, names)
    assert pods_on(k8s, a) == []


def test_an_empty_node_is_drained_once_listed_after_the_control_plane_saw_the_cordon_with_no_fixed_wait(
    testbed: Any, k8s: Any
) -> None:
    (a,) = k8s.add_nodes(1)
    lines = Lines()
    with drainer(testbed) as kube:
        lists = pod_lists_of(kube)
        started = time.monotonic()
        report = drain(kube, a, timeout=60, progress=lines)
        took = time.monotonic() - started
    assert report.drained and report.evicted == []
    # the LIST right after the cordon counts when the taint came before it, else one more is sent once it came
    assert 1 <= len(lists) <= 2, lists
    assert lines.matching("no sign yet") == []
    taints = {(t.key, t.effect) for t in k8s.core.read_node(a).spec.taints or []}
    assert ("node.kubernetes.io/unschedulable", "NoSchedule") in taints
    assert took < LATE_LOOK_SECONDS, f"{took:.1f} s: a fixed wait after the cordon"


def test_the_late_look_drains_pods_bound_until_its_end_as_they_come(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    scheduled = {"late-0-5": 0.5, "late-3": 3.0}
    with late_bindings(k8s, a, scheduled=scheduled, named={"named-2": 2.0}) as late:
        with drainer(testbed) as kube:
            report = drain(kube, a, timeout=60, force=True, settle_seconds=LATE_LOOK_SECONDS)
            done = time.time()
        late.wait_gone()
    assert report.drained, report
    names = ["late-0-5", "late-3", "named-2"]
    assert sorted(report.evicted) == [f"{k8s.ns}/{n}" for n in names]
    assert named_late(report) == {f"{k8s.ns}/{n}" for n in names}
    assert_placed_and_drained_as_they_came(late, scheduled, names)
    assert late.cordoned_at is not None and done - late.cordoned_at >= LATE_LOOK_SECONDS - 0.5  # watched to its end
    assert pods_on(k8s, a) == []


def test_the_late_look_is_bounded_by_the_deadline(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    started = time.monotonic()
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=60, deadline=time.time() + 3, settle_seconds=LATE_LOOK_SECONDS)
    assert report.drained
    # watched until the deadline, not to the late look's end 5 s after the cordon
    assert time.monotonic() - started < LATE_LOOK_SECONDS - 1

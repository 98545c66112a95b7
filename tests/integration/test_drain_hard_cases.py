"""The drain's hard cases on the real control plane, each with its verdict: UID preconditions against a StatefulSet
pod's same-named successor, grace never below 1 s, a pod a finalizer keeps in Terminating past the deadline, and a
pod bound to the node after the cordon."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from drain_orchestrator.kube.evict import Outcome, delete_pod, evict_pod
from tests.integration.drain_support import (
    Lines,
    drain,
    drainer,
    hold,
    pod_lists_of,
    pods_on,
    release,
    set_unschedulable,
)

pytestmark = pytest.mark.integration


def statefulset(k8s: Any, name: str) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": k8s.ns},
        "spec": {
            "serviceName": name,
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": k8s.pod_spec(grace=1)},
        },
    }
    k8s.apps.create_namespaced_stateful_set(k8s.ns, body)


def test_uid_preconditions_spare_a_same_named_successor_elsewhere_and_it_never_holds_the_drain(
    testbed: Any, k8s: Any
) -> None:
    a, b = k8s.add_nodes(2)
    set_unschedulable(k8s, b, True)
    statefulset(k8s, "db")
    (old,) = k8s.wait_pods_ready("app=db", 1)
    assert old.spec.node_name == a
    set_unschedulable(k8s, a, True)
    set_unschedulable(k8s, b, False)
    k8s.core.delete_namespaced_pod("db-0", k8s.ns, grace_period_seconds=1)
    new = k8s.wait_for(
        lambda: next((p for p in k8s.pods("app=db") if k8s.pod_ready(p) and p.spec.node_name == b), None),
        what="db-0 recreated on the other node",
    )
    with drainer(testbed) as kube:
        # a drain that still holds the old pod's identity: both its eviction and its delete miss the successor
        evicted = evict_pod(kube, k8s.ns, "db-0", old.metadata.uid)
        deleted = delete_pod(kube, k8s.ns, "db-0", old.metadata.uid, grace=1)
        assert (evicted.outcome, deleted.outcome) == (Outcome.REPLACED, Outcome.REPLACED)
        started = time.monotonic()
        report = drain(kube, a, timeout=60)
    assert report.drained and report.evicted == [] and report.remaining == []
    assert time.monotonic() - started < 15  # drained at the settle re-list, not held by db-0 on the other node
    successor = k8s.core.read_namespaced_pod("db-0", k8s.ns)
    assert successor.metadata.uid == new.metadata.uid and successor.metadata.deletion_timestamp is None


def test_grace_never_below_one_second(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    k8s.bare_pod("own-zero", node=a, grace=0)  # the pod's own terminationGracePeriodSeconds: 0
    k8s.bare_pod("asked-zero", node=b, grace=30)  # drained with --grace-period 0
    k8s.wait_for(lambda: len([p for p in k8s.pods() if k8s.pod_ready(p)]) == 2, what="2 pods ready")
    for name in ("own-zero", "asked-zero"):
        hold(k8s, name)  # kept in Terminating to read the grace the apiserver recorded
    try:
        with drainer(testbed) as kube:
            own = drain(kube, a, timeout=2, force=True)
            asked = drain(kube, b, timeout=2, force=True, grace_period=0)
        recorded = {p.metadata.name: p.metadata.deletion_grace_period_seconds for p in k8s.pods()}
        assert recorded == {"own-zero": 1, "asked-zero": 1}
        assert own.grace_sent == {f"{k8s.ns}/own-zero": 1} and asked.grace_sent == {f"{k8s.ns}/asked-zero": 1}
    finally:
        for name in ("own-zero", "asked-zero"):
            release(k8s, name)


def test_pod_stuck_terminating_past_the_deadline_is_deleted_again_and_reported(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.bare_pod("stuck", node=a)
    hold(k8s, "stuck")
    k8s.core.delete_namespaced_pod("stuck", k8s.ns, grace_period_seconds=1)
    k8s.wait_for(
        lambda: k8s.core.read_namespaced_pod("stuck", k8s.ns).metadata.deletion_timestamp is not None,
        what="stuck terminating",
    )
    deadline = time.time() + 8
    lines = Lines()
    try:
        with drainer(testbed) as kube:
            report = drain(kube, a, timeout=20, force=True, deadline=deadline, progress=lines)
        assert not report.drained and report.remaining == [f"{k8s.ns}/stuck"]
        (forced,) = report.forced
        assert forced.pod == f"{k8s.ns}/stuck" and forced.grace_seconds == 1
        assert "finalizers: drain-test/hold" in forced.reason and "deleted again" in forced.reason
        assert len(lines.matching(f"deleting pod {k8s.ns}/stuck (grace 1s)")) == 1  # once, not on every pass
        assert k8s.core.read_namespaced_pod("stuck", k8s.ns).metadata.finalizers == ["drain-test/hold"]
    finally:
        release(k8s, "stuck")


def test_pod_bound_after_the_cordon_is_drained_at_the_settle_relist_and_named(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)  # empty: the node looks drained at the first LIST, right after the cordon
    lines = Lines()

    def late_binding(line: str) -> None:
        lines(line)
        if line.endswith(" cordoned"):  # a pod the scheduler bound before it saw the cordon, landing a moment later
            threading.Timer(1.0, lambda: k8s.bare_pod("late", node=a, grace=1)).start()

    started = time.monotonic()
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=60, force=True, progress=late_binding)  # type: ignore[arg-type]
    assert report.drained and report.evicted == [f"{k8s.ns}/late"], report
    assert f"Warning: bound to the node after the cordon, drained too: {k8s.ns}/late" in report.warnings
    assert time.monotonic() - started >= 5.0  # it looked again, Karpenter's minimum drain time after the cordon
    assert pods_on(k8s, a) == []


def test_the_settle_relist_is_bounded_by_the_deadline(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    started = time.monotonic()
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=60, deadline=time.time() + 3)
    assert report.drained
    assert time.monotonic() - started < 3  # no time left to wait for the settle: done with what it saw


def test_pods_gone_soon_after_the_cordon_are_watched_up_to_the_settle_point_with_no_list_after(
    testbed: Any, k8s: Any
) -> None:
    (a,) = k8s.add_nodes(1)
    for i in range(3):
        k8s.bare_pod(f"quick-{i}", node=a, grace=0)  # gone as soon as evicted, well before the settle point
    # a static pod's mirror stays (kubectl skips it): the verdict must not need the node to be empty
    k8s.bare_pod("static", node=a, metadata_extra={"annotations": {"kubernetes.io/config.mirror": "checksum"}})
    k8s.wait_for(lambda: len(pods_on(k8s, a)) == 4, timeout=30, what="4 pods on the node")
    lines = Lines()
    started = time.monotonic()
    with drainer(testbed) as kube:
        lists = pod_lists_of(kube)
        report = drain(kube, a, timeout=60, force=True, progress=lines)
    took = time.monotonic() - started
    assert report.drained and len(report.evicted) == 3, report
    assert [p.metadata.name for p in pods_on(k8s, a)] == ["static"]
    assert [r.pod for r in report.skipped] == [f"{k8s.ns}/static"], report.skipped
    # the first pass's LIST only: the watch saw the three go and no pod arrive up to the settle point, which is
    # what a LIST there would have shown
    assert len(lists) == 1, lists
    assert took >= 5.0 - 0.5, f"done {took:.1f} s after the start: before the settle point"
    assert sorted(lines.matching(" evicted")) == [f"pod/quick-{i} evicted" for i in range(3)], lines.matching("")


def test_a_pod_bound_while_the_drain_watches_toward_the_settle_point_is_evicted_at_once_and_named(
    testbed: Any, k8s: Any
) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.bare_pod("quick", node=a, grace=0)
    k8s.wait_for(lambda: len(pods_on(k8s, a)) == 1, timeout=30, what="a pod on the node")
    lines, seen_at = Lines(), {}

    def late_binding(line: str) -> None:
        lines(line)
        seen_at.setdefault(line, time.monotonic())
        if line.endswith(" cordoned"):  # lands after "quick" went, while the watch waits for the settle point
            threading.Timer(2.0, lambda: k8s.bare_pod("late", node=a, grace=0)).start()

    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=60, force=True, progress=late_binding)  # type: ignore[arg-type]
    assert report.drained and sorted(report.evicted) == [f"{k8s.ns}/late", f"{k8s.ns}/quick"], report
    assert f"Warning: bound to the node after the cordon, drained too: {k8s.ns}/late" in report.warnings
    (cordoned,) = [t for line, t in seen_at.items() if line.endswith(" cordoned")]
    (evicting,) = [t for line, t in seen_at.items() if line.startswith(f"evicting pod {k8s.ns}/late")]
    assert evicting - cordoned < 4.5, "the late pod waited for the settle point instead of waking the watch"
    assert pods_on(k8s, a) == []

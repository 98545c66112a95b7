"""The drain's hard cases on the real control plane, each with its verdict: UID preconditions against a StatefulSet
pod's same-named successor, the 1 s grace floor where it protects, and a pod a finalizer keeps in Terminating past
the deadline. Pods bound to the node after the cordon: test_late_pods.py."""

from __future__ import annotations

import time
from typing import Any

import pytest

from drain_orchestrator.kube.evict import Outcome, delete_pod, evict_pod
from tests.integration.drain_support import Lines, drain, drainer, hold, release, sending, set_unschedulable

pytestmark = pytest.mark.integration


def statefulset(k8s: Any, name: str, grace: int = 1, nodes: list[str] | None = None) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": k8s.ns},
        "spec": {
            "serviceName": name,
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": k8s.pod_spec(grace=grace, nodes=nodes)},
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
    with sending(testbed) as kube:
        # a drain that still holds the old pod's identity: both its eviction and its delete miss the successor
        evicted = evict_pod(kube, k8s.ns, "db-0", old.metadata.uid)
        deleted = delete_pod(kube, k8s.ns, "db-0", old.metadata.uid, grace=1)
        assert (evicted.outcome, deleted.outcome) == (Outcome.REPLACED, Outcome.REPLACED)
        assert k8s.core.read_namespaced_pod("db-0", k8s.ns).metadata.uid == new.metadata.uid  # spared
        started = time.monotonic()
        report = drain(kube, a, timeout=60)
    assert report.drained and report.evicted == [] and report.remaining == []
    assert time.monotonic() - started < 15  # not held by db-0 on the other node
    # the drain sent nothing at the successor: the only requests at db-0 are the two refused above (what the node
    # lifecycle controller may do to a pod of a loaded bed's node meanwhile is not the drain's)
    pod = f"/api/v1/namespaces/{k8s.ns}/pods/db-0"
    assert [(m, p) for m, p, _ in kube.sent if p.startswith(pod)] == [("POST", f"{pod}/eviction"), ("DELETE", pod)]


def test_grace_is_at_least_one_second_where_the_drain_chooses_it_or_a_successor_takes_the_name(
    testbed: Any, k8s: Any
) -> None:
    a, b, c = k8s.add_nodes(3)
    k8s.bare_pod("own-zero", node=a, grace=0)  # the pod's own terminationGracePeriodSeconds: 0
    k8s.bare_pod("asked-zero", node=b, grace=30)  # drained with --grace-period 0
    statefulset(k8s, "db", grace=0, nodes=[c])  # its own 0, but db-0's successor takes the name
    k8s.wait_for(lambda: len([p for p in k8s.pods() if k8s.pod_ready(p)]) == 3, what="3 pods ready")
    for name in ("own-zero", "asked-zero", "db-0"):
        hold(k8s, name)  # kept in Terminating to read the grace the apiserver recorded
    try:
        with drainer(testbed) as kube:
            own = drain(kube, a, timeout=2, force=True)
            asked = drain(kube, b, timeout=2, force=True, grace_period=0)
            stateful = drain(kube, c, timeout=2)
        recorded = {p.metadata.name: p.metadata.deletion_grace_period_seconds for p in k8s.pods()}
        # the pod's own 0 is left as kubectl and Karpenter leave it: its replacement has a name of its own
        assert {k: recorded.get(k) for k in ("own-zero", "asked-zero")} == {"own-zero": 0, "asked-zero": 1}
        assert recorded.get("db-0") == 1
        assert own.grace_sent == {} and asked.grace_sent == {f"{k8s.ns}/asked-zero": 1}
        assert stateful.grace_sent == {f"{k8s.ns}/db-0": 1}
    finally:
        for name in ("own-zero", "asked-zero", "db-0"):
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

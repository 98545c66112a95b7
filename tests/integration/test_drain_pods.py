"""Pod kinds on the real control plane: DaemonSet, mirror, terminal, emptyDir, unmanaged, already
terminating, deleted mid-eviction, StatefulSet successors, a terminating namespace, critical tiers, dry run,
and grace clipping as recorded by the apiserver."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest
from kubernetes import client

from drain_orchestrator.drain.classify import (
    MSG_IGNORE_DAEMONSET,
    MSG_LOCAL_STORAGE,
    MSG_MIRROR,
    MSG_UNREPLICATED,
)
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.engine.drainer import Drainer
from drain_orchestrator.kube.evict import Outcome, evict_pod
from tests.integration.drain_support import (
    Lines,
    drain,
    drainer,
    hold,
    pods_on,
    release,
    set_unschedulable,
)

pytestmark = pytest.mark.integration


def mixed_node(k8s: Any, node: str, tag: str = "") -> dict[str, str]:
    """One pod of each kind kubectl treats differently, on ``node``; returns role → pod name."""
    k8s.daemonset(f"ds{tag}")
    emptydir = {"volumes": [{"name": "scratch", "emptyDir": {}}]}
    k8s.bare_pod(f"unmanaged{tag}", node=node)
    k8s.bare_pod(f"mirror{tag}", node=node, metadata_extra={"annotations": {"kubernetes.io/config.mirror": "x"}})
    k8s.bare_pod(f"terminal{tag}", node=node, spec_extra={"restartPolicy": "Never"})
    k8s.bare_pod(f"scratch{tag}", node=node, spec_extra=emptydir)
    k8s.deployment(f"web{tag}", 1, nodes=[node])
    k8s.wait_pods_ready(f"app=web{tag}", 1)
    k8s.wait_pods_ready(f"app=ds{tag}", 1)
    k8s.core.patch_namespaced_pod_status(f"terminal{tag}", k8s.ns, {"status": {"phase": "Succeeded"}})
    k8s.wait_for(
        lambda: k8s.core.read_namespaced_pod(f"terminal{tag}", k8s.ns).status.phase == "Succeeded",
        what="terminal pod Succeeded",
    )
    names = {p.metadata.name: p for p in pods_on(k8s, node)}
    web = next(n for n in names if n.startswith(f"web{tag}-"))
    ds = next(n for n in names if n.startswith(f"ds{tag}-"))
    return {
        "unmanaged": f"unmanaged{tag}",
        "mirror": f"mirror{tag}",
        "terminal": f"terminal{tag}",
        "scratch": f"scratch{tag}",
        "web": web,
        "ds": ds,
    }


def test_kubectl_refusals_block_the_whole_drain(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    roles = mixed_node(k8s, a)
    key = {r: f"{k8s.ns}/{n}" for r, n in roles.items()}
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=5)
    assert not report.drained and report.evicted == []
    assert {(r.pod, r.reason) for r in report.refused} == {
        (key["unmanaged"], MSG_UNREPLICATED),
        (key["scratch"], MSG_LOCAL_STORAGE),
    }
    skipped = {s.pod: s.reason for s in report.skipped}
    assert skipped == {key["ds"]: MSG_IGNORE_DAEMONSET, key["mirror"]: MSG_MIRROR}
    assert k8s.core.read_node(a).spec.unschedulable is True
    assert len(pods_on(k8s, a)) == 6


def test_force_and_emptydir_flags_remove_them_daemonset_and_mirror_stay(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    roles = mixed_node(k8s, a)
    key = {r: f"{k8s.ns}/{n}" for r, n in roles.items()}
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=30, force=True, delete_emptydir_data=True)
    assert report.drained, report
    assert sorted(report.evicted) == sorted(key[r] for r in ("unmanaged", "terminal", "scratch", "web"))
    assert {s.pod for s in report.skipped} == {key["ds"], key["mirror"]}
    assert sorted(p.metadata.name for p in pods_on(k8s, a)) == sorted([roles["ds"], roles["mirror"]])


def test_evict_daemonsets_taints_the_node_and_evicts_them_last(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.daemonset("ds")
    k8s.deployment("web", 2)
    k8s.wait_pods_ready("app=web", 2)
    k8s.wait_pods_ready("app=ds", 1)
    lines = Lines()
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=30, evict_daemonsets=True, progress=lines)
    assert report.drained, report
    evictions = [x.split()[-1] for x in lines.matching("evicting pod")]
    assert len(evictions) == 3 and "/ds-" in evictions[-1]  # the DaemonSet pod went last
    taints = k8s.core.read_node(a).spec.taints or []
    assert any(t.key == "drain-orchestrator.io/draining" and t.effect == "NoSchedule" for t in taints)
    # the DaemonSet controller no longer wants a pod on the tainted node, so it does not come back
    k8s.wait_for(
        lambda: k8s.apps.read_namespaced_daemon_set("ds", k8s.ns).status.desired_number_scheduled == 0,
        what="DaemonSet desires no pod on the tainted node",
    )
    assert all(not p.metadata.name.startswith("ds-") for p in pods_on(k8s, a))


def test_already_terminating_pod_is_waited_on_then_skipped_when_stuck(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.bare_pod("stuck", node=a)
    hold(k8s, "stuck")
    k8s.core.delete_namespaced_pod("stuck", k8s.ns, grace_period_seconds=1)
    try:
        with drainer(testbed) as kube:
            waited = drain(kube, a, timeout=3, force=True)
            assert not waited.drained and waited.terminating == [f"{k8s.ns}/stuck"] and waited.evicted == []
            skipped = drain(kube, a, timeout=10, force=True, skip_wait_for_delete_timeout=1)
        assert skipped.drained
        assert [s.pod for s in skipped.skipped] == [f"{k8s.ns}/stuck"]
    finally:
        release(k8s, "stuck")


def test_pod_deleted_while_its_eviction_is_refused(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    for i in range(2):
        k8s.bare_pod(f"solo-{i}", node=a, metadata_extra={"labels": {"app": "solo"}})
    k8s.wait_pods_ready("app=solo", 2)
    k8s.pdb("solo", {"app": "solo"}, min_available=2)
    k8s.wait_pdb("solo", disruptions_allowed=0)
    lines = Lines()
    result: dict[str, Any] = {}
    with drainer(testbed) as kube:
        t = threading.Thread(target=lambda: result.setdefault("r", drain(kube, a, 60, lines, force=True)))
        t.start()
        k8s.wait_for(lambda: len(lines.matching("error when evicting")) >= 2, what="evictions refused")
        for i in range(2):
            k8s.core.delete_namespaced_pod(f"solo-{i}", k8s.ns, grace_period_seconds=0)
        # a budget that stays shut is waited on for up to BUDGET_WAIT_SECONDS (30 s) before the pass that sees the
        # pods gone; room beyond it for a loaded host
        t.join(45)
    assert "r" in result, "the drain did not end within 45 s of the pods' deletion"
    report = result["r"]
    assert report.drained and report.evicted == []
    assert pods_on(k8s, a) == []


def test_statefulset_pod_recreated_under_the_same_name_counts_as_gone(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    set_unschedulable(k8s, b, True)
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": k8s.ns},
        "spec": {
            "serviceName": "db",
            "replicas": 1,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": k8s.pod_spec(grace=1)},
        },
    }
    k8s.apps.create_namespaced_stateful_set(k8s.ns, body)
    (old,) = k8s.wait_pods_ready("app=db", 1)
    assert old.spec.node_name == a
    set_unschedulable(k8s, b, False)
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=60)
    assert report.drained and report.evicted == [f"{k8s.ns}/db-0"]
    new = k8s.wait_for(
        lambda: next((p for p in k8s.pods("app=db") if k8s.pod_ready(p) and p.spec.node_name == b), None),
        what="db-0 back on the other node",
    )
    assert new.metadata.name == "db-0" and new.metadata.uid != old.metadata.uid


def test_terminating_namespace(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    ns = f"{k8s.ns}-gone"
    k8s.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns, "finalizers": ["drain-test/hold"]},
        "spec": k8s.pod_spec(node=a),
    }
    created = k8s.core.create_namespaced_pod(ns, pod)
    k8s.core.delete_namespace(ns)
    k8s.wait_for(
        lambda: k8s.core.read_namespaced_pod("p", ns).metadata.deletion_timestamp is not None,
        what="namespace controller deleting the pod",
    )
    try:
        with drainer(testbed) as kube:
            # the eviction subresource is refused in a terminating namespace: 403 NamespaceTerminating
            res = evict_pod(kube, ns, "p", created.metadata.uid)
            assert res.outcome is Outcome.NAMESPACE_TERMINATING, res
            waiting = drain(kube, a, timeout=2, force=True)
            assert not waiting.drained and waiting.terminating == [f"{ns}/p"]
            k8s.core.patch_namespaced_pod("p", ns, {"metadata": {"finalizers": None}})
            done = drain(kube, a, timeout=30, force=True)
        assert done.drained
    finally:
        with contextlib.suppress(client.ApiException):
            k8s.core.patch_namespaced_pod("p", ns, {"metadata": {"finalizers": None}})


def test_critical_pods_go_after_the_workload_tier(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.bare_pod("work", node=a)
    k8s.bare_pod("dns", node=a, spec_extra={"priorityClassName": "system-cluster-critical"})
    k8s.wait_for(lambda: len([p for p in pods_on(k8s, a) if k8s.pod_ready(p)]) == 2, what="pods ready")
    hold(k8s, "work")
    options = DrainOptions(force=True)
    try:
        with drainer(testbed) as kube:
            draining = Drainer(kube, a, options)
            first = draining.drain_pass()
            assert first.evicted == [f"{k8s.ns}/work"]
            second = draining.drain_pass()
            assert second.evicted == [] and second.terminating == [f"{k8s.ns}/work"]
            release(k8s, "work")
            k8s.wait_for(lambda: len(pods_on(k8s, a)) == 1, what="work pod gone")
            third = draining.drain_pass()
            assert third.evicted == [f"{k8s.ns}/dns"]
    finally:
        release(k8s, "work")


def test_dry_run_changes_nothing(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 2)
    before = {p.metadata.uid for p in k8s.wait_pods_ready("app=web", 2)}
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=10, dry_run=True)
    assert report.dry_run and not report.drained
    assert sorted(report.evicted) == sorted(f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, a))
    assert not k8s.core.read_node(a).spec.unschedulable
    pods = pods_on(k8s, a)
    assert {p.metadata.uid for p in pods} == before
    assert all(p.metadata.deletion_timestamp is None for p in pods)


def test_grace_clipped_to_a_two_minute_deadline_as_recorded_by_the_apiserver(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.bare_pod("slow", node=a, grace=300)
    k8s.bare_pod("quick", node=a, grace=60)
    k8s.wait_for(lambda: len([p for p in pods_on(k8s, a) if k8s.pod_ready(p)]) == 2, what="pods ready")
    deadline = time.time() + 120
    with drainer(testbed) as kube:
        report = Drainer(kube, a, DrainOptions(force=True, deadline=deadline, deadline_margin=2)).drain_pass()
    assert sorted(report.evicted) == [f"{k8s.ns}/quick", f"{k8s.ns}/slow"]
    recorded = {p.metadata.name: p.metadata.deletion_grace_period_seconds for p in pods_on(k8s, a)}
    assert 115 <= recorded["slow"] <= 118  # 120 s window minus the 2 s margin, minus the time spent
    assert recorded["quick"] == 60  # fits: the pod keeps its own grace
    assert report.grace_sent == {f"{k8s.ns}/slow": recorded["slow"]}

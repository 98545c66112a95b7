"""Per-pod drain policy on the real control plane, under the shipped RBAC: `skip` from a Deployment (read through
its ReplicaSet) and from a pod, `wait-for-completion` on a Job held on a voluntary drain until it finishes (or
the deadline) and evicted at once on an involuntary one, `evict-order` stages, and Karpenter's do-not-disrupt
with its duration."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.policy import DO_NOT_DISRUPT, ORDER_ANNOTATION, POLICY_ANNOTATION
from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.engine.drainer import Drainer, drain_node
from testbed.kube import SETUP_SECONDS, KubeScenario
from tests.integration.drain_support import Lines, drain, drainer, hold, pods_on, release
from tests.integration.scenario_support import Background

pytestmark = pytest.mark.integration


def annotate_deployment(k8s: Any, name: str, annotations: dict[str, str]) -> None:
    k8s.apps.patch_namespaced_deployment(name, k8s.ns, {"metadata": {"annotations": annotations}})


def batch_pod(k8s: Any, name: str, node: str, annotations: dict[str, str]) -> str:
    """A long-running batch pod on ``node`` that runs until the test marks it Succeeded (kwok completes a Job's own
    pods at once, so this one is unmanaged: drained with ``force``); returns its name."""
    k8s.bare_pod(name, node=node, grace=1, metadata_extra={"labels": {"app": name}, "annotations": annotations})
    k8s.wait_pods_ready(f"app={name}", 1)
    return name


def finish(k8s: Any, pod: str) -> None:
    k8s.core.patch_namespaced_pod_status(pod, k8s.ns, {"status": {"phase": "Succeeded"}})


def ready_on(k8s: Any, node: str, count: int) -> Any:
    """A look for the set-up: ``count`` of the node's pods Ready."""
    return lambda: len([p for p in pods_on(k8s, node) if k8s.pod_ready(p)]) == count


def in_background(fn: Any) -> tuple[threading.Thread, dict[str, DrainReport]]:
    out: dict[str, DrainReport] = {}
    t = threading.Thread(target=lambda: out.setdefault("report", fn()), daemon=True)
    t.start()
    return t, out


def test_skip_leaves_the_pods_and_the_node_counts_as_drained(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    k8s.deployment_on("keep", 1, [a], b)
    annotate_deployment(k8s, "keep", {POLICY_ANNOTATION: "skip"})
    k8s.deployment_on("web", 1, [a], b)
    k8s.bare_pod("agent", node=a, metadata_extra={"annotations": {POLICY_ANNOTATION: "skip"}})
    k8s.wait_for(ready_on(k8s, a, 3), timeout=SETUP_SECONDS, what="3 pods ready on a")
    keep = next(p for p in pods_on(k8s, a) if p.metadata.name.startswith("keep-"))
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=60)  # no --force: the unmanaged pod would be refused, but it is skipped
    assert report.drained and report.refused == []
    assert [e.split("/")[1].split("-")[0] for e in report.evicted] == ["web"]
    assert {s.pod: s.reason for s in report.skipped} == {
        f"{k8s.ns}/{keep.metadata.name}": f"{POLICY_ANNOTATION}=skip (Deployment {k8s.ns}/keep): left on the node",
        f"{k8s.ns}/agent": f"{POLICY_ANNOTATION}=skip (pod): left on the node",
    }
    left = {p.metadata.name: p for p in pods_on(k8s, a)}
    assert set(left) == {keep.metadata.name, "agent"}
    assert all(p.metadata.deletion_timestamp is None for p in left.values())


def test_wait_for_completion_holds_a_job_on_a_voluntary_drain_until_it_finishes(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    k8s.deployment_on("web", 1, [a], b)
    pod = batch_pod(k8s, "batch", a, {POLICY_ANNOTATION: "wait-for-completion"})
    key = f"{k8s.ns}/{pod}"
    options = DrainOptions(force=True, voluntary=True, deadline=time.time() + 600, force_delete_on_deadline=True)
    with drainer(testbed) as kube:
        thread, out = in_background(lambda: drain_node(kube, a, options, timeout=90))
        # the rest of the node drains around it
        k8s.wait_for(lambda: not [p for p in pods_on(k8s, a) if p.metadata.name.startswith("web-")], what="web gone")
        looking = Drainer(kube, a, DrainOptions(force=True, dry_run=True))
        looking.view.cordoned = True  # a look at the node as it drains, without a cordon of its own
        probe = looking.drain_pass()
        assert [(h.pod, h.reason) for h in probe.held_by_policy] == [
            (key, f"{POLICY_ANNOTATION}=wait-for-completion (pod): waiting for it to finish")
        ]
        assert k8s.core.read_namespaced_pod(pod, k8s.ns).metadata.deletion_timestamp is None
        assert thread.is_alive()  # the drain waits for it
        finish(k8s, pod)
        thread.join(60)
    report = out["report"]
    assert report.drained, report
    assert key in report.evicted  # removed once finished, like any terminal pod
    assert all(p.metadata.name != pod for p in pods_on(k8s, a))


def test_wait_for_completion_is_evicted_at_once_on_an_involuntary_drain(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    pod = batch_pod(k8s, "batch", a, {POLICY_ANNOTATION: "wait-for-completion"})
    started = time.monotonic()
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=60, force=True, voluntary=False, deadline=time.time() + 120)  # Spot
    assert report.drained and report.evicted == [f"{k8s.ns}/{pod}"] and report.held_by_policy == []
    assert time.monotonic() - started < 30


def test_a_held_pod_is_evicted_when_only_its_grace_still_fits_before_the_deadline(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    pod = batch_pod(k8s, "batch", a, {POLICY_ANNOTATION: "wait-for-completion"})  # grace 1 s
    hold(k8s, pod)  # kept in Terminating once evicted, to read when that was
    deadline = time.time() + 12
    release_at = deadline - 2.0 - 1 - 1  # the deadline policy's time: margin, grace, 1 s of slack
    try:
        with drainer(testbed) as kube:
            report = drain(kube, a, timeout=30, force=True, voluntary=True, deadline=deadline)
        assert report.evicted == [f"{k8s.ns}/{pod}"]
        evicted_at = eviction_time(k8s, pod)
        assert release_at - 1.0 <= evicted_at <= deadline - 2.0  # not before its time, and gone by the deadline
    finally:
        release(k8s, pod)


def test_evict_order_removes_each_stage_only_once_the_earlier_one_is_gone(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    k8s.deployment_on("first", 1, [a], b)
    annotate_deployment(k8s, "first", {ORDER_ANNOTATION: "-1"})
    k8s.bare_pod("second", node=a)
    k8s.bare_pod("third", node=a, metadata_extra={"annotations": {ORDER_ANNOTATION: "5"}})
    k8s.wait_for(ready_on(k8s, a, 3), timeout=SETUP_SECONDS, what="3 pods ready on a")
    first = next(p.metadata.name for p in pods_on(k8s, a) if p.metadata.name.startswith("first-"))
    for name in (first, "second"):
        hold(k8s, name)
    options = DrainOptions(force=True)
    try:
        with drainer(testbed) as kube:
            draining = Drainer(kube, a, options)
            assert draining.drain_pass().evicted == [f"{k8s.ns}/{first}"]
            waiting = draining.drain_pass()
            assert waiting.evicted == [] and waiting.terminating == [f"{k8s.ns}/{first}"]
            release(k8s, first)
            k8s.wait_for(lambda: all(p.metadata.name != first for p in pods_on(k8s, a)), what="first gone")
            assert draining.drain_pass().evicted == [f"{k8s.ns}/second"]
            assert draining.drain_pass().evicted == []
            release(k8s, "second")
            k8s.wait_for(lambda: all(p.metadata.name != "second" for p in pods_on(k8s, a)), what="second gone")
            assert draining.drain_pass().evicted == [f"{k8s.ns}/third"]
    finally:
        for name in (first, "second"):
            release(k8s, name)


def test_a_low_evict_order_pod_a_budget_holds_in_one_namespace_never_delays_another_namespace(
    testbed: Any, k8s: Any
) -> None:
    a, b = k8s.add_nodes(2)
    other = KubeScenario(testbed.admin_api_client(), prefix="tenant-b")
    try:
        # namespace A: its first pod (evict-order -5) under a budget that allows nothing, and a later pod of A
        k8s.deployment_on("db", 1, [a], b)
        annotate_deployment(k8s, "db", {ORDER_ANNOTATION: "-5"})
        k8s.pdb("db", {"app": "db"}, min_available=1)
        k8s.wait_pdb("db", disruptions_allowed=0)
        k8s.bare_pod("late-a", node=a, grace=1)
        # namespace B: two orders of its own, both later than A's first
        other.bare_pod("web-b", node=a, grace=1)
        other.bare_pod("late-b", node=a, grace=1, metadata_extra={"annotations": {ORDER_ANNOTATION: "3"}})
        k8s.wait_for(lambda: len([p for p in pods_on(k8s, a) if k8s.pod_ready(p)]) == 2, what="A's pods ready")
        k8s.wait_for(lambda: len([p for p in other.pods(node=a) if k8s.pod_ready(p)]) == 2, what="B's pods ready")
        db = next(p.metadata.name for p in pods_on(k8s, a) if p.metadata.name.startswith("db-"))
        options = DrainOptions(force=True, voluntary=True, deadline=time.time() + 600, force_delete_on_deadline=True)
        with drainer(testbed) as kube:
            lines = Lines()
            thread, out = in_background(lambda: drain_node(kube, a, options, timeout=40, progress=lines))
            # B's pods go, both of its orders, while A's first pod is held by its budget: nothing of A holds them
            try:
                k8s.wait_for(lambda: not other.pods(node=a), timeout=25, what="namespace B's pods gone from the node")
            except AssertionError:
                raise AssertionError(str(lines.lines)) from None
            assert thread.is_alive()  # A's pods still hold the drain: only A's
            thread.join(60)
        report = out["report"]
        assert sorted(report.evicted) == [f"{other.ns}/late-b", f"{other.ns}/web-b"]
        left = {p.metadata.name: p for p in pods_on(k8s, a)}
        assert set(left) == {db, "late-a"} and all(p.metadata.deletion_timestamp is None for p in left.values())
        assert [b.pod for b in report.blocked] == [f"{k8s.ns}/{db}"]
        # A's later pod is held by its evict-order behind A's held pod, and said so
        ((pod, why, hold_kind),) = [(h.pod, h.reason, h.policy) for h in report.held_by_policy]
        assert (pod, hold_kind) == (f"{k8s.ns}/late-a", "evict-order")
        assert f"waits for the earlier orders of {k8s.ns}; {k8s.ns}/{db} is held" in why
    finally:
        other.cleanup()
        other.api_client.close()


def test_karpenter_do_not_disrupt_blocks_voluntary_drains_only_with_its_duration(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    ann = "annotations"
    k8s.bare_pod("pinned", node=a, metadata_extra={ann: {DO_NOT_DISRUPT: "true"}}, grace=1)
    k8s.bare_pod("warmup", node=a, metadata_extra={ann: {DO_NOT_DISRUPT: "6s"}}, grace=1)
    k8s.bare_pod("typo", node=a, metadata_extra={ann: {DO_NOT_DISRUPT: "forever"}}, grace=1)
    k8s.wait_for(ready_on(k8s, a, 3), timeout=SETUP_SECONDS, what="3 pods ready on a")
    started = k8s.core.read_namespaced_pod("warmup", k8s.ns).status.start_time.timestamp()
    ns = k8s.ns
    hold(k8s, "warmup")
    with drainer(testbed) as kube:
        voluntary = drain(kube, a, timeout=15, force=True, voluntary=True, deadline=time.time() + 600)
        assert not voluntary.drained
        assert sorted(voluntary.evicted) == [f"{ns}/typo", f"{ns}/warmup"]
        # the 6 s protection ran out before the warmup pod was evicted (status.startTime has 1 s resolution)
        assert eviction_time(k8s, "warmup") >= started + 6 - 1
        release(k8s, "warmup")
        assert [h.pod for h in voluntary.held_by_policy] == [f"{ns}/pinned"]
        warned = f"Warning: {ns}/typo: {DO_NOT_DISRUPT}='forever' is not \"true\" nor a positive duration; ignored"
        assert warned in voluntary.warnings
        pinned = k8s.core.read_namespaced_pod("pinned", ns)
        assert pinned.metadata.deletion_timestamp is None
        involuntary = drain(kube, a, timeout=30, force=True, voluntary=False, deadline=time.time() + 120)
    assert involuntary.drained and involuntary.evicted == [f"{ns}/pinned"]


def eviction_time(k8s: Any, pod: str) -> float:
    """When the apiserver accepted the pod's eviction: its deletionTimestamp less the grace it was given."""
    meta = k8s.core.read_namespaced_pod(pod, k8s.ns).metadata
    return float(meta.deletion_timestamp.timestamp() - meta.deletion_grace_period_seconds)


OWNED = {"kubernetes.io/cluster/blue": "owned"}


def test_the_lambda_lets_a_batch_pod_finish_on_scale_in_and_evicts_it_on_a_spot_warning(
    testbed: Any, aws: Any, k8s: Any, lam: Any
) -> None:
    """The event kind decides: an ASG scale-in is voluntary (held until the deadline policy's time), a Spot
    interruption is not (evicted at once)."""
    from testbed import samples

    aws.eks_cluster("blue")
    (scaled_in,) = aws.asg("ng-blue", size=1, tags=OWNED)
    spot = aws.instance(tags=OWNED)
    node_asg, node_spot = aws.nodes_for(k8s, [scaled_in, spot])
    for name, node in (("batch-asg", node_asg), ("batch-spot", node_spot)):
        batch_pod(k8s, name, node, {POLICY_ANNOTATION: "wait-for-completion"})
        hold(k8s, name)  # kept in Terminating once evicted, to read when that was
    try:
        lam.configure("blue", DEADLINE_ASG_TERMINATE_SECONDS="20", WAIT_FOR_VOLUME_DETACH="never")
        evicted: dict[str, float] = {}

        def read_eviction_then_release() -> None:
            k8s.wait_for(
                lambda: k8s.core.read_namespaced_pod("batch-spot", k8s.ns).metadata.deletion_timestamp,
                timeout=120,
                what="batch-spot evicted",
            )
            evicted["at"] = eviction_time(k8s, "batch-spot")
            release(k8s, "batch-spot")  # read: the Spot drain need not wait out its 2-minute window for the pod

        reader = Background(read_eviction_then_release)
        started = time.time()
        run = lam.run(samples.ec2_event("spot-interruption-terminate.json", instance_id=spot), skip_time=False)
        reader.outcome(timeout=60)
        assert run.status == "SUCCEEDED", run.error
        # at once: held like the scale-in's pod, it would go at the 2-minute window's end (a margin for a loaded host)
        assert evicted["at"] - started < 60
        token = aws.start_lifecycle_action("ng-blue", "drain", scaled_in)
        event = samples.lifecycle_event(
            "asg-terminate.json", instance_id=scaled_in, asg="ng-blue", hook="drain", token=token
        )
        started = time.time()
        lam.run(event, skip_time=False)
        held_for = eviction_time(k8s, "batch-asg") - started
        assert held_for >= 20 - 2 - 1 - 1 - 2  # held until its grace only just fit before the 20 s deadline
    finally:
        for name in ("batch-asg", "batch-spot"):
            release(k8s, name)

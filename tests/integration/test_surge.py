"""Surge before evict on the bed's real controllers (deployment, replicaset, disruption, HPA controllers; kube-
scheduler; kwok makes pods Ready): a pod its PodDisruptionBudget never lets go is replaced first, then evicted,
with a Ready replica at every moment, and what was changed on the workload is taken back."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client

from drain_orchestrator import pacing
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.surge import HOLDERS, NODE_RECORD
from drain_orchestrator.engine.drainer import Drainer
from drain_orchestrator.engine.surge_restore import restore_node
from drain_orchestrator.kube.rest import Kube
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.audit_support import audit_offset, function_requests
from tests.integration.drain_support import drain, drainer, drainer_client
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import Background
from tests.integration.surge_support import (
    ReadyWatch,
    ReplicasWatch,
    hpa,
    opt_in,
    read_hpa,
    statefulset,
    surge_annotations,
)

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def _events_on(k8s: KubeScenario, kind: str, name: str) -> list[Any]:
    sel = f"involvedObject.kind={kind},involvedObject.name={name}"
    return list(k8s.core.list_namespaced_event(k8s.ns, field_selector=sel).items)


class Recording(Kube):
    """The product's client, noting each request it sends (the apiserver still answers every one)."""

    def __init__(self, api_client: Any) -> None:
        super().__init__(api_client)
        self.sent: list[tuple[str, str]] = []

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.sent.append((method, path))
        return super().request(method, path, **kwargs)


def replicasets(k8s: KubeScenario, deployment: str) -> list[str]:
    return [
        rs.metadata.name
        for rs in k8s.apps.list_namespaced_replica_set(k8s.ns, label_selector=f"app={deployment}").items
    ]


def _singleton(k8s: KubeScenario, name: str, node: str, spare: str) -> Any:
    """One replica on ``node`` (its replacement may go to ``spare``), opted in, under minAvailable 1."""
    (pod,) = k8s.deployment_on(name, 1, [node], spare, grace=1)
    opt_in(k8s, name)
    k8s.pdb(name, {"app": name}, min_available=1)
    k8s.wait_pdb(name, disruptions_allowed=0)
    return pod


def _singleton_on_an_owned_instance(aws: AwsSeed, k8s: KubeScenario) -> tuple[str, str, str, Any]:
    """The instance (of cluster blue's ASG), its node, a spare node and the singleton's pod on the node."""
    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    return iid, node, spare, _singleton(k8s, "web", node, spare)


def test_singleton_under_min_available_drains_through_the_lambda_with_a_ready_replica_at_every_moment(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare, original = _singleton_on_an_owned_instance(aws, k8s)
    assert original.spec.node_name == node
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue")
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)

    with ReadyWatch(testbed, k8s, "app=web") as watch:
        run = lam.run(event)
        k8s.wait_for(lambda: k8s.apps.read_namespaced_deployment("web", k8s.ns).status.replicas == 1, what="scale-in")

    assert watch.error is None, watch.error
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "drained", inst
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE"
    assert action["completed_by"] == aws.role_arn("drain-orchestrator")
    # the invariant, from the apiserver's own history: never fewer than one Ready replica, two while surged
    assert min(watch.counts) >= 1, watch.counts
    assert max(watch.counts) == 2, watch.counts
    assert original.metadata.name in watch.seen and original.metadata.name not in watch.ready  # it did go
    assert all(p.spec.node_name == spare for p in k8s.pods("app=web") if p.metadata.deletion_timestamp is None)
    # what the surge changed is back, and nothing of it is left on the workload or the node
    dep = k8s.apps.read_namespaced_deployment("web", k8s.ns)
    assert dep.spec.replicas == 1 and surge_annotations(dep) == {}
    assert NODE_RECORD not in (k8s.core.read_node(node).metadata.annotations or {})
    (note,) = inst["report"]["surge"]
    assert note["workload"] == f"Deployment {k8s.ns}/web" and note["status"] == "restored"
    assert (note["via"], note["replicas_before"], note["replicas_after"]) == ("deployment", 1, 2)
    assert note["pods"] == [f"{k8s.ns}/{original.metadata.name}"]
    reasons = [e.reason for e in _events_on(k8s, "Deployment", "web")]
    assert "SurgeBeforeEvict" in reasons and "SurgeRestored" in reasons
    completed = next(m for m in lam.notifications() if m["phase"] == "completed")
    assert completed["report"]["surge"][0]["replicas_after"] == 2


def test_hpa_managed_deployment_surges_through_the_hpa_floor_and_gets_it_back(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    node, spare = k8s.add_nodes(2)
    _singleton(k8s, "api", node, spare)
    hpa(k8s, "api", min_replicas=1, max_replicas=1)

    with ReadyWatch(testbed, k8s, "app=api") as watch, drainer(testbed) as kube:
        report = drain(kube, node, timeout=90, surge="annotated", run_id="t")
        k8s.wait_for(lambda: k8s.apps.read_namespaced_deployment("api", k8s.ns).status.replicas == 1, what="scale-in")

    assert watch.error is None, watch.error
    assert report.drained, report
    assert min(watch.counts) >= 1 and max(watch.counts) == 2, watch.counts
    (note,) = report.surge
    assert (note.via, note.replicas_before, note.replicas_after) == ("hpa", 1, 2)
    assert note.status == "restored"
    h = read_hpa(k8s, "api")
    assert (h.spec.min_replicas, h.spec.max_replicas) == (1, 1) and surge_annotations(h) == {}
    assert k8s.apps.read_namespaced_deployment("api", k8s.ns).spec.replicas == 1  # the HPA scaled it back


def test_unschedulable_replacement_and_a_statefulset_are_reported_and_the_surge_is_taken_back(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    (node,) = k8s.add_nodes(1)
    # only this node fits the Deployment: once it is cordoned, the surged replica cannot be scheduled
    k8s.deployment("pinned", 1, nodes=[node], grace=1)
    k8s.wait_pods_ready("app=pinned", 1)
    opt_in(k8s, "pinned")
    k8s.pdb("pinned", {"app": "pinned"}, min_available=1)
    statefulset(k8s, "db", node)
    k8s.wait_pods_ready("app=db", 1)
    k8s.pdb("db", {"app": "db"}, min_available=1)
    k8s.wait_pdb("pinned", disruptions_allowed=0)
    k8s.wait_pdb("db", disruptions_allowed=0)

    with drainer(testbed) as kube:
        report = drain(kube, node, timeout=12, surge="always", run_id="t")
        # a replay, or another execution for the node, starts from nothing in memory: it finds the node's entry
        again = drain(kube, node, timeout=3, surge="always", run_id="t2")
        held = k8s.apps.read_namespaced_deployment("pinned", k8s.ns)
        restored = restore_node(kube, node, [])

    assert not report.drained and "timed out" in report.warnings
    notes = {n.workload: n for n in report.surge}
    stuck = notes[f"Deployment {k8s.ns}/pinned"]
    assert stuck.status == "unschedulable" and "were unschedulable" in stuck.detail, stuck
    assert (stuck.replicas_before, stuck.replicas_after) == (1, 2)
    assert notes[f"StatefulSet {k8s.ns}/db"].status == "unsupported"
    assert "StatefulSet" in notes[f"StatefulSet {k8s.ns}/db"].detail
    assert {n.workload: n.status for n in again.surge}[f"Deployment {k8s.ns}/pinned"] == "unschedulable"
    # reported, not looped, never doubled: one replica added over every pass of both drains, for this node only
    assert held.spec.replicas == 2
    assert json.loads(held.metadata.annotations[HOLDERS]) == {node: {"count": 1, "run": "t"}}
    assert [n.status for n in restored] == ["restored"]
    dep = k8s.apps.read_namespaced_deployment("pinned", k8s.ns)
    assert dep.spec.replicas == 1 and surge_annotations(dep) == {}
    assert NODE_RECORD not in (k8s.core.read_node(node).metadata.annotations or {})
    assert k8s.apps.read_namespaced_stateful_set("db", k8s.ns).spec.replicas == 1  # never touched


def test_without_the_annotation_nothing_is_surged_and_the_report_says_how_to_opt_in(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("plain", 1, [node], spare, grace=1)
    k8s.pdb("plain", {"app": "plain"}, min_available=1)
    k8s.wait_pdb("plain", disruptions_allowed=0)
    api = drainer_client(testbed)
    kube = Recording(api)
    try:
        report = drain(kube, node, timeout=5, surge="annotated", run_id="t")
    finally:
        api.close()
    (note,) = report.surge
    assert note.status == "not-enabled" and "drain-orchestrator.io/surge" in note.detail
    # the drain policy lookup already read the annotations (the Deployment, by its ReplicaSet's name): the surge
    # decision sends no request of its own, not even for the ReplicaSet
    reads = [
        path for method, path in kube.sent if method == "GET" and ("/replicasets" in path or "/deployments" in path)
    ]
    assert reads == [f"/apis/apps/v1/namespaces/{k8s.ns}/deployments/plain"]
    dep = k8s.apps.read_namespaced_deployment("plain", k8s.ns)
    assert dep.spec.replicas == 1 and surge_annotations(dep) == {}


def test_a_crashed_invocation_resumes_without_surging_twice_and_the_verdict_takes_the_surge_back(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    from drain_orchestrator.workflow import runtime

    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    # pinned to the node: the surged replica stays Pending, so the surge is still in place when the invocation dies
    k8s.deployment("pinned", 1, nodes=[node], grace=1)
    (pod,) = k8s.wait_pods_ready("app=pinned", 1)
    opt_in(k8s, "pinned")
    k8s.pdb("pinned", {"app": "pinned"}, min_available=1)
    k8s.wait_pdb("pinned", disruptions_allowed=0)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue", DRAIN_PASS_SECONDS="5", DEADLINE_ASG_TERMINATE_SECONDS="30", FORCE_DELETE_ON_DEADLINE="false")
    crashed, release = threading.Event(), threading.Event()

    def fault(point: str) -> None:
        # the first invocation dies at the start of the second pass, after the first one surged and was
        # checkpointed; the runner invokes again after the invocation timeout and replays from the checkpoints
        if point == "pass-1" and not crashed.is_set():
            crashed.set()
            release.wait(120)
            raise SystemExit("the killed invocation's thread, released after the test")

    runtime.fault_injection = fault
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    try:
        with ReplicasWatch(testbed, k8s, "pinned") as replicas:
            run = lam.run(event, invocation_timeout=15)
    finally:
        release.set()

    assert crashed.is_set() and replicas.error is None
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    # the PDB never let the pod go (its replacement could not be scheduled): the deadline came with it in place
    assert inst["result"] == "deadline-missed", json.dumps(inst, indent=1)
    assert inst["report"]["blocked"] == [f"{k8s.ns}/{pod.metadata.name}"]
    assert replicas.values == [1, 2, 1], replicas.values  # surged once across the crash, taken back at the verdict
    assert inst["surge_restored"] == [f"Deployment {k8s.ns}/pinned: replicas 2 -> 1: the drain has ended"]
    (note,) = inst["report"]["surge"]
    assert note["status"] == "unschedulable" and (note["replicas_before"], note["replicas_after"]) == (1, 2)
    dep = k8s.apps.read_namespaced_deployment("pinned", k8s.ns)
    assert surge_annotations(dep) == {}


def test_several_pods_of_one_deployment_on_the_node_surge_by_their_number(testbed: Testbed, k8s: KubeScenario) -> None:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("pair", 2, [node], spare, grace=1)
    opt_in(k8s, "pair")
    max_surge(k8s, "pair", 2)  # its rollout may run two more: so may the surge
    k8s.pdb("pair", {"app": "pair"}, min_available=2)
    k8s.wait_pdb("pair", disruptions_allowed=0)

    with ReadyWatch(testbed, k8s, "app=pair") as watch, drainer(testbed) as kube:
        report = drain(kube, node, timeout=90, surge="annotated", run_id="t")
        k8s.wait_for(lambda: k8s.apps.read_namespaced_deployment("pair", k8s.ns).status.replicas == 2, what="scale-in")

    assert watch.error is None, watch.error
    assert report.drained, report
    assert min(watch.counts) >= 2, watch.counts  # what the PDB promises, at every moment
    (note,) = report.surge
    assert (note.replicas_before, note.replicas_after, len(note.pods)) == (2, 4, 2)
    assert note.status == "restored"
    dep = k8s.apps.read_namespaced_deployment("pair", k8s.ns)
    assert dep.spec.replicas == 2 and surge_annotations(dep) == {}


def max_surge(k8s: KubeScenario, name: str, value: int | str) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": value, "maxUnavailable": 0}}
    k8s.apps.patch_namespaced_deployment(name, k8s.ns, {"spec": {"strategy": strategy}})


def test_surges_stay_within_the_deployments_max_surge_and_surge_max_replicas(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    node, spare = k8s.add_nodes(2)
    # four pods refused at once; its rollout may run all four again (100%), the cluster's cap allows two
    k8s.deployment_on("wide", 4, [node], spare, grace=1)
    max_surge(k8s, "wide", "100%")
    # one pod that must never run beside another (Recreate): no surge at all
    k8s.deployment_on("legacy", 1, [node], spare, grace=1)
    k8s.apps.patch_namespaced_deployment(
        "legacy", k8s.ns, {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}}
    )
    for name, replicas in (("wide", 4), ("legacy", 1)):
        opt_in(k8s, name)
        k8s.pdb(name, {"app": name}, min_available=replicas + 9)  # refuses at any scale the surge may reach
        k8s.wait_pdb(name, disruptions_allowed=0)
    try:
        with drainer(testbed) as kube:
            options = DrainOptions(surge="annotated", run_id="t", surge_max_replicas=2, force=True)
            report = Drainer(kube, node, options).drain_pass()
        notes = {n.workload: n for n in report.surge}
        wide = notes[f"Deployment {k8s.ns}/wide"]
        assert (wide.status, wide.replicas_before, wide.replicas_after) == ("surged", 4, 6), wide
        legacy = notes[f"Deployment {k8s.ns}/legacy"]
        assert legacy.status == "limit-reached" and "Recreate strategy allows 0" in legacy.detail, legacy
        assert k8s.apps.read_namespaced_deployment("wide", k8s.ns).spec.replicas == 6
        assert k8s.apps.read_namespaced_deployment("legacy", k8s.ns).spec.replicas == 1
        holders = json.loads(k8s.apps.read_namespaced_deployment("wide", k8s.ns).metadata.annotations[HOLDERS])
        assert holders[node]["count"] == 2
    finally:
        with drainer(testbed) as kube:
            restore_node(kube, node)


class WrittenBetween(Kube):
    """The product's client; just before its first write to an HPA, someone else writes that HPA (as the HPA
    controller does at each sync), so the apiserver refuses the surge's resourceVersion precondition with a 409."""

    def __init__(self, api_client: Any, k8s: KubeScenario) -> None:
        super().__init__(api_client)
        self.k8s = k8s
        self.hpa_patches: list[int] = []

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if method == "PATCH" and "/horizontalpodautoscalers/" in path and not self.hpa_patches:
            name = path.rsplit("/", 1)[1]
            touched = {"metadata": {"annotations": {"example.com/touched": "yes"}}}
            autoscaling = client.AutoscalingV2Api(self.k8s.api_client)
            autoscaling.patch_namespaced_horizontal_pod_autoscaler(name, self.k8s.ns, touched)
        resp = super().request(method, path, **kwargs)
        if "/horizontalpodautoscalers/" in path and method == "PATCH":
            self.hpa_patches.append(resp.status)
        return resp


def test_an_hpa_written_between_the_surges_read_and_its_write_is_surged_in_the_same_pass(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    (node,) = k8s.add_nodes(1)
    k8s.deployment("api", 1, nodes=[node], grace=1)  # pinned: the replacement stays Pending, the surge in place
    k8s.wait_pods_ready("app=api", 1)
    opt_in(k8s, "api")
    k8s.pdb("api", {"app": "api"}, min_available=1)
    hpa(k8s, "api", min_replicas=1, max_replicas=2)
    k8s.wait_pdb("api", disruptions_allowed=0)
    kube = WrittenBetween(drainer_client(testbed), k8s)

    try:
        report = Drainer(kube, node, DrainOptions(surge="annotated", run_id="t")).drain_pass()
    finally:
        restored = restore_node(kube, node)

    assert kube.hpa_patches[:2] == [409, 200], kube.hpa_patches  # refused once, read again and written
    (note,) = report.surge
    assert (note.status, note.via, note.replicas_before, note.replicas_after) == ("surged", "hpa", 1, 2), note
    assert [n.detail for n in restored] == ["HPA minReplicas 2 -> 1: the drain has ended"]
    h = read_hpa(k8s, "api")
    assert (h.spec.min_replicas, h.spec.max_replicas) == (1, 2) and surge_annotations(h) == {}


def test_a_surge_that_waited_for_a_rollout_goes_soon_after_it_ends_and_evicts_in_that_pass(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid, _, _, original = _singleton_on_an_owned_instance(aws, k8s)
    # a rollout that cannot end by itself: its new pod fits no node, and the old one stays (maxUnavailable 0)
    k8s.apps.patch_namespaced_deployment("web", k8s.ns, {"spec": {"template": {"spec": {"nodeSelector": {"x": "y"}}}}})
    k8s.wait_for(
        lambda: (
            (s := k8s.apps.read_namespaced_deployment("web", k8s.ns).status).replicas == 2 and s.updated_replicas == 1
        ),
        what="a rollout in progress",
    )
    monkeypatch.setattr(pacing, "HELD_LINGER_SECONDS", 3.0)  # the first pass ends held soon
    # a held drain's first wait is RECHECK_MIN_SECONDS: longer than the look a rollout gets
    lam.configure("blue", RECHECK_MIN_SECONDS="40", DEADLINE_ASG_TERMINATE_SECONDS="300")
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    offset = audit_offset(testbed)

    def undo_once_the_first_pass_ended() -> float:
        # a watch is audited when it closes: the first pass closes its budget watch as it ends, held
        k8s.wait_for(
            lambda: any(
                e["verb"] == "watch" and e["objectRef"].get("resource") == "poddisruptionbudgets"
                for e in function_requests(testbed, offset)
            ),
            what="the first pass ending",
        )
        undo = [{"op": "remove", "path": "/spec/template/spec/nodeSelector"}]
        k8s.apps.patch_namespaced_deployment("web", k8s.ns, undo)
        k8s.wait_for(
            lambda: (
                (s := k8s.apps.read_namespaced_deployment("web", k8s.ns).status).replicas == 1
                and s.updated_replicas == 1
            ),
            what="the rollout undone",
        )
        return time.time()

    undo = Background(undo_once_the_first_pass_ended)
    started = time.time()
    run = lam.run(event, timeout=300, skip_time=False)
    ended = time.time()
    undone = undo.outcome()

    (inst,) = run.result["instances"]
    assert inst["result"] == "drained", inst
    passes = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{") and '"drain pass"' in line]
    # the first pass found the rollout and ended held; the next look came within ROLLOUT_RECHECK_SECONDS (not the
    # 40 s of a held wait), surged, watched for the replacement instead of ending at its first look, and evicted
    assert [(p["evicted"], p["held_early"]) for p in passes] == [(0, True), (1, False)], passes
    assert undone - started < pacing.ROLLOUT_RECHECK_SECONDS, "the rollout was undone after the first wait began"
    assert ended - started < pacing.ROLLOUT_RECHECK_SECONDS + 20, ended - started
    (note,) = inst["report"]["surge"]
    assert (note["status"], note["replicas_before"], note["replicas_after"]) == ("restored", 1, 2)
    assert original.metadata.name not in {p.metadata.name for p in k8s.pods("app=web")}

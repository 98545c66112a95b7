"""The shipped RBAC is minimal and sufficient, with surge before evict and without, proven from the apiserver's
audit log.

The bed's kube-apiserver audits every request of the `drain-orchestrator` group (testbed/bed.py). One
drain through the real handler, under the shipped RBAC, touches every path the product has on the Kubernetes API:
a node found by providerID (get by DNS name misses, then list), cordon (get + patch), a Kubernetes Event, a
DaemonSet pod (its owner looked up), a Deployment whose PodDisruptionBudget never allows a disruption (eviction
refused, budgets listed and watched) forced just before the deadline (delete), a StatefulSet's and a Job's pods
(their controllers looked up for drain policies, a Deployment's by its ReplicaSet's name: several of one namespace
with one LIST, a lone one in another namespace with a GET; a ReplicaSet of no Deployment read itself), then the
volume gate (the
node's VolumeAttachments listed; a mirror pod left on the node has its claim read, whose volume does not hold).
Both Deployments are opted in to surge before evict and pinned to the node, so their surged replicas cannot be
scheduled: one is scaled through spec.replicas, the other through its HPA, and both are taken back at the verdict.
The (group, resource, verb) set it used must equal the set the ClusterRoles grant (rbac.yaml and rbac-surge.yaml,
both applied with the function's default SURGE_BLOCKED_PODS=annotated): a rule nobody uses is a failure, and so is a
request refused. The same drain with SURGE_BLOCKED_PODS=never runs under rbac.yaml alone (what `rbac apply --surge
off` leaves): it must use exactly what that grants, and be refused nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.control_plane import AUDIT_GROUP
from testbed.kube import KubeScenario
from tests.integration.gates_support import VolumeAttachments, bound_claim, claim_volume, delete_volumes
from tests.integration.lambda_support import LambdaHarness, Run
from tests.integration.rbac_support import Permission, base_permissions, surge_permissions, without_surge_rights
from tests.integration.surge_support import hpa, opt_in

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def audit_events(testbed: Testbed, offset: int) -> list[dict[str, Any]]:
    with testbed.audit_log.open("rb") as f:
        f.seek(offset)
        lines = f.read().decode().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    return [e for e in events if AUDIT_GROUP in e.get("user", {}).get("groups", [])]


def used_permissions(events: list[dict[str, Any]]) -> set[Permission]:
    used = set()
    for event in events:
        ref = event["objectRef"]
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        used.add((ref.get("apiGroup", ""), resource, event["verb"]))
    return used


def _drain_every_path(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, **settings: str
) -> tuple[Run, int]:
    """The drain that takes every path on the Kubernetes API (the module's docstring), and the audit log's size
    just before it ran."""
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid], by="id")  # not named by DNS: found by listing providerIDs
    k8s.daemonset("ds")
    k8s.wait_pods_ready("app=ds", 1)
    k8s.deployment("web", 2, nodes=[node], grace=1)
    k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, min_available=2)
    opt_in(k8s, "web")
    k8s.deployment("api", 1, nodes=[node], grace=1)
    k8s.wait_pods_ready("app=api", 1)
    k8s.pdb("api", {"app": "api"}, min_available=1)
    opt_in(k8s, "api")
    hpa(k8s, "api", min_replicas=1, max_replicas=2)
    k8s.wait_pdb("web", disruptions_allowed=0)
    k8s.wait_pdb("api", disruptions_allowed=0)
    controlled = {"serviceName": "db", "replicas": 1, "selector": {"matchLabels": {"app": "db"}}}
    template = {"metadata": {"labels": {"app": "db"}}, "spec": k8s.pod_spec(nodes=[node], grace=1)}
    k8s.apps.create_namespaced_stateful_set(
        k8s.ns, {"metadata": {"name": "db"}, "spec": {**controlled, "template": template}}
    )
    job_spec = k8s.pod_spec(grace=1, extra={"restartPolicy": "Never"})
    job = client.BatchV1Api(k8s.api_client).create_namespaced_job(
        k8s.ns, {"metadata": {"name": "batch"}, "spec": {"suspend": True, "template": {"spec": job_spec}}}
    )
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "batch", "uid": job.metadata.uid, "controller": True}
    k8s.bare_pod("batch-x1", node=node, metadata_extra={"labels": {"app": "batch"}, "ownerReferences": [owner]})
    # generous: under two test workers kwok's ready stage has lagged past the default 90 s
    k8s.wait_pods_ready("app=db", 1, timeout=240)
    # kwok completes a Job's pod as soon as it runs: Running and Ready last only an instant, so wait for the end
    k8s.wait_for(
        lambda: [p for p in k8s.pods("app=batch") if p.status.phase == "Succeeded"],
        timeout=240,
        what="the Job's pod to complete",
    )
    # a ReplicaSet of no Deployment: its pod's controller is read from the ReplicaSet itself
    solo = {"replicas": 1, "selector": {"matchLabels": {"app": "solo"}}}
    solo_template = {"metadata": {"labels": {"app": "solo"}}, "spec": k8s.pod_spec(nodes=[node], grace=1)}
    k8s.apps.create_namespaced_replica_set(
        k8s.ns, {"metadata": {"name": "solo"}, "spec": {**solo, "template": solo_template}}
    )
    k8s.wait_pods_ready("app=solo", 1)
    lone = KubeScenario(testbed.admin_api_client(), prefix="lone")  # a namespace with one ReplicaSet on the node
    lone.deployment("lone", 1, nodes=[node], grace=1)
    lone.wait_pods_ready("app=lone", 1)
    mirror = {"annotations": {"kubernetes.io/config.mirror": "x"}}
    bound_claim(k8s, "static-data", f"pv-static-{k8s.run_id}")
    k8s.bare_pod("static", node=node, metadata_extra=mirror, spec_extra=claim_volume("static-data"))
    attachments = VolumeAttachments(k8s)
    attachments.attach(node, f"pv-static-{k8s.run_id}")  # the mirror pod's: stays, does not hold the gate
    # the budgets never allow (their pods' replacements fit no node): the deadline's policy deletes those pods, in the
    # pass after the drain's respectful minimum (10 s here), 20 s after the event
    lam.configure(
        "blue",
        DEADLINE_STATE_CHANGE_SECONDS="20",
        MIN_DRAIN_SECONDS="10",
        WAIT_FOR_VOLUME_DETACH="always",
        **settings,
    )
    offset = testbed.audit_log.stat().st_size

    aws.stop_instance(iid)
    try:
        run = lam.run(samples.ec2_event("state-change-stopping.json", instance_id=iid))
    finally:
        attachments.cleanup()
        delete_volumes(k8s, [f"pv-static-{k8s.run_id}"])
        lone.cleanup()

    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "drained" and inst["node"] == node
    return run, offset


# used only where the apiserver does not stream lists (Kubernetes 1.33, or WatchList off): this bed streams them, so
# the drain lists and watches its budgets with one watch; test_streamed_lists_refused.py drains and waits on budgets
# under the same role on an apiserver that does not, where these LISTs are made
LISTED_WHERE_NOT_STREAMED: set[Permission] = {("policy", "poddisruptionbudgets", "list")}


def _assert_used_exactly(testbed: Testbed, offset: int, granted: set[Permission], manifests: str) -> None:
    events = audit_events(testbed, offset)
    refused = [(e["verb"], e["requestURI"]) for e in events if e.get("responseStatus", {}).get("code") == 403]
    assert refused == []  # sufficient: the shipped RBAC allowed every request
    used = used_permissions(events)
    assert granted - used - LISTED_WHERE_NOT_STREAMED == set(), f"granted but never used: drop from {manifests}"
    assert used - granted == set()


def test_shipped_rbac_grants_exactly_what_a_drain_uses(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    run, offset = _drain_every_path(testbed, aws, k8s, lam)
    (inst,) = run.result["instances"]
    # both surges taken back: at the verdict, or by the pass once the replacement was Ready (kwok can be that quick)
    in_pass = {n["workload"] for n in (inst["report"] or {}).get("surge", []) if n["status"] == "restored"}
    at_verdict = {r.split(":", 1)[0] for r in inst["surge_restored"]}
    assert in_pass | at_verdict == {f"Deployment {k8s.ns}/web", f"Deployment {k8s.ns}/api"}, inst
    assert k8s.apps.read_namespaced_deployment("web", k8s.ns).spec.replicas == 2
    _assert_used_exactly(
        testbed, offset, base_permissions() | surge_permissions(), "infra/k8s/rbac.yaml or rbac-surge.yaml"
    )


def test_without_surge_the_base_rbac_alone_grants_exactly_what_a_drain_uses(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """SURGE_BLOCKED_PODS=never under rbac.yaml alone: the same drain, its Deployments still opted in, patches no
    Deployment or HPA, lists no HPA (no look for surges left behind), and is refused nothing."""
    with without_surge_rights(testbed):
        run, offset = _drain_every_path(testbed, aws, k8s, lam, SURGE_BLOCKED_PODS="never")
    (inst,) = run.result["instances"]
    assert not (inst["report"] or {}).get("surge") and not inst.get("surge_restored"), inst
    # the budgets never allow: the deadline's policy deleted the Deployments' pods (2 web, 1 api)
    forced = sorted(p.split("/", 1)[1].split("-", 1)[0] for p in inst["report"]["forced"])
    assert forced == ["api", "web", "web"], inst["report"]["forced"]
    _assert_used_exactly(testbed, offset, base_permissions(), "infra/k8s/rbac.yaml")

"""The pods' controllers looked up on the real apiserver, under the shipped RBAC: a Deployment's pods cost one
metadata-only LIST of the namespace's Deployments (their ReplicaSets are not read), and ReplicaSets of no Deployment
one GET each after it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from drain_orchestrator.drain.classify import PodInfo
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.policy import POLICY_ANNOTATION, Owner, OwnerKey
from drain_orchestrator.engine.verdicts import classify_node
from drain_orchestrator.kube.pods import list_node_pods
from drain_orchestrator.kube.rest import Kube
from tests.integration.drain_support import drainer

pytestmark = pytest.mark.integration


def _workloads(k8s: Any, bare: bool = False) -> str:
    a, b = k8s.add_nodes(2)
    for name in ("web", "api", "worker"):
        k8s.deployment_on(name, 1, [a], b)
    k8s.apps.patch_namespaced_deployment("api", k8s.ns, {"metadata": {"annotations": {POLICY_ANNOTATION: "skip"}}})
    if bare:  # ReplicaSets of no Deployment, named and labelled as a Deployment's are: read themselves
        for name, policy in (("batch", "skip"), ("queue", "evict")):
            _bare_replicaset(k8s, name, a, policy)
        k8s.wait_pods_ready("tier=bare", 2)
    return a


def _bare_replicaset(k8s: Any, name: str, node: str, policy: str) -> None:
    labels = {"app": name, "tier": "bare", "pod-template-hash": "abc12"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{name}-abc12",
            "namespace": k8s.ns,
            "labels": labels,
            "annotations": {POLICY_ANNOTATION: policy},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": k8s.pod_spec(nodes=[node])},
        },
    }
    k8s.apps.create_namespaced_replica_set(k8s.ns, body)


def _classify(kube: Kube, node: str) -> tuple[dict[str, str], dict[OwnerKey, Owner], int]:
    pods = [PodInfo.from_dict(p) for p in list_node_pods(kube, node)]
    owners: dict[OwnerKey, Owner] = {}
    calls0 = kube.calls
    found = classify_node(kube, pods, DrainOptions(), owners, time.time())
    assert found.problems == []
    policies = {key.split("/")[1].split("-")[0]: p.policy.value for key, p in found.policies.items()}
    return policies, owners, kube.calls - calls0


def test_several_controllers_of_a_namespace_cost_one_list_per_kind(testbed: Any, k8s: Any) -> None:
    node = _workloads(k8s)
    with drainer(testbed) as kube:
        policies, owners, calls = _classify(kube, node)
    assert policies == {"web": "evict", "api": "skip", "worker": "evict"}  # api's policy read from its Deployment
    assert sorted(kind for _, kind, _ in owners) == ["Deployment"] * 3  # by their ReplicaSets' names
    assert all(o.found is True for o in owners.values())
    assert calls == 1  # one LIST of the namespace's Deployments (a GET of each ReplicaSet and Deployment: 6)


def test_replicasets_of_no_deployment_are_read_themselves_after_the_deployments_list(testbed: Any, k8s: Any) -> None:
    node = _workloads(k8s, bare=True)
    with drainer(testbed) as kube:
        policies, owners, calls = _classify(kube, node)
    assert policies == {"web": "evict", "api": "skip", "worker": "evict", "batch": "skip", "queue": "evict"}
    assert owners[(k8s.ns, "Deployment", "batch")].found is False  # named so, but no such Deployment
    assert owners[(k8s.ns, "ReplicaSet", "batch-abc12")].found is True
    assert calls == 1 + 2  # the Deployments' LIST (batch and queue not in it), then a GET of each ReplicaSet

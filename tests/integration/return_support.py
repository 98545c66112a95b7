"""What the bed tests of return to service and of the scheduled-change lifecycle share: an owned node running one
pod, what its Node object says (cordon, return mark, Events), and its boot as its kubelet reports it."""

from __future__ import annotations

import time
from collections.abc import Callable

from drain_orchestrator.returns import ANN_RETURN, ReturnMark
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario

OWNED = {"kubernetes.io/cluster/blue": "owned"}


def owned_node_with_a_pod(aws: AwsSeed, k8s: KubeScenario) -> tuple[str, str, str]:
    """An instance of cluster blue by its own tag, its node, and the uid of the one pod running there."""
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    k8s.deployment("web", 1, nodes=[node])
    k8s.wait_pods_ready("app=web", 1)
    (pod,) = k8s.core.list_namespaced_pod(k8s.ns, label_selector="app=web").items
    return iid, node, pod.metadata.uid


def until(what: str, check: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def marked(k8s: KubeScenario, node: str) -> bool:
    """Cordoned with a return mark: by an execution that may return it."""
    n = k8s.core.read_node(node)
    return bool(n.spec.unschedulable) and ANN_RETURN in (n.metadata.annotations or {})


def node_events(k8s: KubeScenario, node: str) -> list[str]:
    items = k8s.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node},source=drain-orchestrator"
    ).items
    return [e.reason for e in items]


def pod_stayed(k8s: KubeScenario, node: str, pod_uid: str) -> bool:
    """The one pod is the same and still on the node: nothing was evicted."""
    pods = k8s.core.list_namespaced_pod(k8s.ns, label_selector="app=web").items
    return [(p.metadata.uid, p.spec.node_name) for p in pods] == [(pod_uid, node)]


def mark_of(k8s: KubeScenario, node: str) -> ReturnMark | None:
    """The node's return mark: which execution may return it, for which event."""
    return ReturnMark.from_json((k8s.core.read_node(node).metadata.annotations or {}).get(ANN_RETURN))


def booted(k8s: KubeScenario, node: str, boot_id: str) -> None:
    """The node's kubelet reports this boot (``status.nodeInfo.bootID``), as after the machine (re)started. kwok
    keeps the value it finds there (its node stages write ``bootID`` back as read)."""
    k8s.core.patch_node_status(node, {"status": {"nodeInfo": {"bootID": boot_id}}})

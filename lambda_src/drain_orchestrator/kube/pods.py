"""Reading the pods of a node (raw JSON, counted requests), and watching them (a drain waits on the watch for its pods
to go: engine/waits.py); their controllers: kube/owners.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.streamed_list import list_and_watch
from drain_orchestrator.kube.watch import Watch

CHUNK_SIZE = 500  # kubectl's --chunk-size default
WATCH_SECONDS = 300  # the longest watch asked for; one that ends hands back to a LIST


@dataclass(frozen=True)
class NodePods:
    items: list[dict[str, Any]]
    resource_version: str | None  # of the LIST: a watch from here misses nothing that happened after it


def pod_ips(items: list[dict[str, Any]]) -> set[str]:
    """The IPs of these pods that a load balancer's ip-mode target can be (host-network pods share the instance's)."""
    return {
        ip["ip"]
        for p in items
        if not (p.get("spec") or {}).get("hostNetwork")
        for ip in (p.get("status") or {}).get("podIPs") or []
        if ip.get("ip")
    }


@dataclass
class SeenIps:
    """The pod IPs a drain's LIST of the node found, for the load-balancer gate (its ip-mode targets are pod IPs,
    and the pods are gone once drained): kept from the drain's own LIST instead of a LIST of their own."""

    ips: set[str] = field(default_factory=set)
    listed: bool = False  # a LIST of the node's pods was made (``ips`` may still be empty: no pod had an IP)

    def note(self, items: list[dict[str, Any]]) -> None:
        self.ips |= pod_ips(items)
        self.listed = True


def list_node_pods(kube: Kube, node: str, label_selector: str | None = None) -> list[dict[str, Any]]:
    """All pods bound to ``node`` (``fieldSelector=spec.nodeName``), following continue tokens."""
    return list_node_pods_at(kube, node, label_selector).items


def list_node_pods_at(kube: Kube, node: str, label_selector: str | None = None) -> NodePods:
    """``list_node_pods`` and the LIST's resourceVersion."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    rv: str | None = None
    while True:
        query = {
            "fieldSelector": f"spec.nodeName={node}",
            "labelSelector": label_selector,
            "limit": CHUNK_SIZE,
            "continue": token,
        }
        resp = kube.request("GET", "/api/v1/pods", query=query)
        if not resp.ok:
            raise resp.error(f"list pods on node/{node}")
        items.extend(resp.body.get("items") or [])
        meta = resp.body.get("metadata") or {}
        rv = rv or meta.get("resourceVersion")
        token = meta.get("continue") or None
        if not token:
            return NodePods(items, rv)


def list_and_watch_node_pods(kube: Kube, node: str, label_selector: str | None = None) -> tuple[NodePods, Watch] | None:
    """``list_node_pods_at`` and a watch of the node's pods from that LIST, in one request (a streaming list:
    kube/streamed_list.py), the watch ended by the server after WATCH_SECONDS; None when the apiserver does not
    stream lists (the caller lists)."""
    query = {"fieldSelector": f"spec.nodeName={node}", "labelSelector": label_selector}
    streamed = list_and_watch(kube, "/api/v1/pods", query, resource="pods", watch_seconds=WATCH_SECONDS)
    return None if streamed is None else (NodePods(streamed.items, streamed.resource_version), streamed.watch)


def with_events(listing: NodePods, events: list[dict[str, Any]]) -> NodePods:
    """``listing`` with the events of a watch from its resourceVersion applied, in order: the node's pods as of the
    last event (a pod is its UID: a new pod under an old name is another pod; one that leaves the node is DELETED)."""
    pods = {str((p.get("metadata") or {}).get("uid", "")): p for p in listing.items}
    rv = listing.resource_version
    for event in events:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        if event.get("type") == "DELETED":
            pods.pop(uid, None)
        elif event.get("type") in ("ADDED", "MODIFIED"):
            pods[uid] = obj
        rv = meta.get("resourceVersion") or rv
    return NodePods(list(pods.values()), rv)


def watch_node_pods(kube: Kube, node: str, since: str, timeout: float) -> Watch:
    """A watch of the pods bound to ``node`` from the LIST at resourceVersion ``since``, which the server ends after
    ``timeout`` seconds, at most WATCH_SECONDS (a drain without a timeout waits on as many as it needs; engine/waits.py
    waits on it for pods to go)."""
    seconds = max(1, math.ceil(min(timeout, WATCH_SECONDS)))
    query = {
        "watch": "1",
        "fieldSelector": f"spec.nodeName={node}",
        "resourceVersion": since,
        "allowWatchBookmarks": "false",
        "timeoutSeconds": seconds,
    }
    return Watch(kube, "/api/v1/pods", query, timeout=seconds + 5)

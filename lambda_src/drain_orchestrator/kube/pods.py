"""Reading the pods of a node (raw JSON, counted requests), and waiting for some to go (a watch, not polling);
their controllers: kube/owners.py."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from http import HTTPStatus
from typing import Any

from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.watch import Watch

CHUNK_SIZE = 500  # kubectl's --chunk-size default


@dataclass(frozen=True)
class NodePods:
    items: list[dict[str, Any]]
    resource_version: str | None  # of the LIST: a watch from here misses nothing that happened after it


class PodsWatched(StrEnum):
    """How a wait for pods to go ended."""

    GONE = "gone"  # every pod waited for went and none arrived: the node holds the LIST's pods less those
    ARRIVED = "arrived"  # a pod was bound to the node meanwhile: the next pass lists it and sends it on its way
    ENDED = "ended"  # the time ran out, the watch was cut or its version is gone (410): the next pass lists again
    FORBIDDEN = "forbidden"  # the role may not watch pods (not upgraded yet): the caller polls


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


def wait_for_deletions(
    kube: Kube,
    node: str,
    since: str,
    uids: set[str],
    timeout: float,
    *,
    check: Callable[[], None] | None = None,
    check_every: float = 5.0,
    quiet_until: float | None = None,
) -> PodsWatched:
    """Block until every pod in ``uids`` has been deleted from ``node`` (watched from the LIST at ``since``), or
    ``timeout`` seconds pass. One request however many pods go and however long they take. ``check`` runs every
    ``check_every`` seconds meanwhile; what it raises ends it. With ``quiet_until`` (monotonic), once all went it
    watches on until then: a node just cordoned is looked at again a few seconds after the cordon for pods the
    scheduler bound late, and a watch that saw none arrive (GONE) stands for a LIST at its end."""
    left, known = set(uids), set(uids)
    if not left or timeout <= 0:
        return PodsWatched.ENDED  # nothing watched: only a LIST says what is on the node
    end = time.monotonic() + timeout
    quiet = min(end, quiet_until) if quiet_until is not None else None
    query = {
        "watch": "1",
        "fieldSelector": f"spec.nodeName={node}",
        "resourceVersion": since,
        "allowWatchBookmarks": "false",
        "timeoutSeconds": max(1, math.ceil(timeout)),
    }
    watch = Watch(kube, "/api/v1/pods", query, timeout=timeout + 5)
    next_check = time.monotonic() + check_every
    seen = False
    try:
        while True:
            now = time.monotonic()
            if not left and (quiet is None or now >= quiet):
                return PodsWatched.GONE
            if now >= end:
                return PodsWatched.ENDED if left else PodsWatched.GONE
            if check is not None and now >= next_check:
                check()
                next_check = time.monotonic() + check_every
            wake = end if left or quiet is None else quiet
            event = watch.next(min(wake, next_check if check is not None else wake) - now)
            if event is False:
                continue
            if event is None:
                if not seen and watch.status == HTTPStatus.FORBIDDEN:
                    return PodsWatched.FORBIDDEN
                # cut (an apiserver restart) or not served yet (429 while a restarted apiserver's cache fills):
                # the next pass lists again, after a moment so that a refusing apiserver is not asked in a loop
                if not seen and left:
                    time.sleep(max(0.0, min(end - time.monotonic(), 1.0)))
                return PodsWatched.ENDED
            assert isinstance(event, dict)
            seen = True
            kind = event.get("type")
            if kind == "ERROR":  # the version is gone (410): the next pass lists afresh
                return PodsWatched.ENDED
            uid = str(((event.get("object") or {}).get("metadata") or {}).get("uid", ""))
            if kind == "DELETED":
                left.discard(uid)
            elif kind == "ADDED" and uid not in known:
                return PodsWatched.ARRIVED
    finally:
        watch.close()

"""Reading the pods of a node (raw JSON, counted requests), and waiting for some to go (a watch, not polling);
their controllers: kube/owners.py."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.watch import Watch

CHUNK_SIZE = 500  # kubectl's --chunk-size default


@dataclass(frozen=True)
class NodePods:
    items: list[dict[str, Any]]
    resource_version: str | None  # of the LIST: a watch from here misses nothing that happened after it


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
) -> bool | None:
    """Block until every pod in ``uids`` has been deleted from ``node`` (watched from the LIST at ``since``), or
    ``timeout`` seconds pass: True when all went, False on timeout, a watch cut short or a version gone (410: the
    next pass lists again), None when the watch was forbidden (a role without ``watch pods``): the caller polls.
    One request however many pods go and however long they take. ``check`` runs every ``check_every`` seconds
    meanwhile; what it raises ends it."""
    left = set(uids)
    if not left or timeout <= 0:
        return bool(not left)
    end = time.monotonic() + timeout
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
        while left:
            now = time.monotonic()
            if now >= end:
                return False
            if check is not None and now >= next_check:
                check()
                next_check = time.monotonic() + check_every
            event = watch.next(min(end, next_check if check is not None else end) - now)
            if event is False:
                continue
            if event is None:
                if not seen and watch.status == HTTPStatus.FORBIDDEN:  # the role may not watch pods: the caller polls
                    return None
                # cut (an apiserver restart) or not served yet (429 while a restarted apiserver's cache fills):
                # the next pass lists again, after a moment so that a refusing apiserver is not asked in a loop
                if not seen:
                    time.sleep(max(0.0, min(end - time.monotonic(), 1.0)))
                return False
            assert isinstance(event, dict)
            seen = True
            if event.get("type") == "ERROR":  # the version is gone (410): the next pass lists afresh
                return False
            if event.get("type") == "DELETED":
                left.discard(str(((event.get("object") or {}).get("metadata") or {}).get("uid", "")))
        return True
    finally:
        watch.close()

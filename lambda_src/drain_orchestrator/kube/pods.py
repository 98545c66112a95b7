"""Reading the pods of a node and the DaemonSets that own them (raw JSON, counted requests)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from drain_orchestrator.kube.rest import Kube

CHUNK_SIZE = 500  # kubectl's --chunk-size default


def list_node_pods(kube: Kube, node: str, label_selector: str | None = None) -> list[dict[str, Any]]:
    """All pods bound to ``node`` (``fieldSelector=spec.nodeName``), following continue tokens."""
    items: list[dict[str, Any]] = []
    token: str | None = None
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
        token = (resp.body.get("metadata") or {}).get("continue") or None
        if not token:
            return items


def look_up_daemonsets(kube: Kube, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], bool | str]:
    """(namespace, name) → True (exists), False (404) or the error message, as the classifier expects."""
    out: dict[tuple[str, str], bool | str] = {}
    for ns, name in keys:
        resp = kube.request("GET", f"/apis/apps/v1/namespaces/{ns}/daemonsets/{name}")
        if resp.ok:
            out[(ns, name)] = True
        elif resp.status == 404:
            out[(ns, name)] = False
        else:
            out[(ns, name)] = f"get daemonset {ns}/{name}: {resp.status} {resp.message}"
    return out

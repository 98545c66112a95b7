"""Reading the pods of a node (raw JSON, counted requests); their controllers: kube/owners.py."""

from __future__ import annotations

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

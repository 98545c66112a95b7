"""Add one taint to a node, idempotently, without overwriting a concurrent change to its taints."""

from __future__ import annotations

from typing import Any

from drain_orchestrator.kube.cordon import CONFLICT_RETRIES, _apply, _get_node
from drain_orchestrator.kube.errors import KubeError
from drain_orchestrator.kube.rest import Kube


def add_taint(kube: Kube, node: str, taint: dict[str, str], *, dry_run: bool = False) -> bool:
    """True if the taint was added, False if the node already had it (same key and effect)."""
    for _ in range(CONFLICT_RETRIES):
        current = _get_node(kube, node).body
        meta: dict[str, Any] = current.get("metadata") or {}
        taints = list((current.get("spec") or {}).get("taints") or [])
        if any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"] for t in taints):
            return False
        # spec.taints has no merge key: the patch replaces the list; resourceVersion turns a race into a 409
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {"taints": [*taints, taint]}}
        if _apply(kube, node, patch, dry_run):
            return True
    raise KubeError(f"node/{node}: conflicting updates, gave up after {CONFLICT_RETRIES} tries", 409)

"""Surges left behind by a drain that never reached its verdict, found and taken back (drain/surge_expiry.py says
which entries; engine/surge.py restores each one as a verdict would).

Surged Deployments and HPAs carry the label ``drain-orchestrator.io/surge-held`` while any entry is in place, so the
Lambda's look (at each drain's verdict) is one filtered LIST of each, answered from the apiserver's cache. The
command line can also look at every Deployment and HPA (``labelled=False``): surges made before the label existed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from drain_orchestrator.drain.report import SurgeNote
from drain_orchestrator.drain.surge import HELD_LABEL, HOLDERS, parse_holders
from drain_orchestrator.drain.surge_expiry import LeftBehind, left_behind
from drain_orchestrator.engine.surge_restore import restore_entry, restore_node
from drain_orchestrator.kube.rest import Kube

LISTS = {"deployment": "/apis/apps/v1/deployments", "hpa": "/apis/autoscaling/v2/horizontalpodautoscalers"}


@dataclass(frozen=True)
class LeftSurge:
    """One node's surge of one Deployment that no drain will take back."""

    deployment: str  # "namespace/name"
    node: str
    count: int
    via: str  # "deployment" or "hpa" (the object carrying the entry)
    why: str


def find_left_behind(kube: Kube, now: float, *, nodes: Iterable[str] = (), labelled: bool = True) -> list[LeftSurge]:
    """Every entry left behind at ``now``; entries of ``nodes`` count as left behind whatever their expiry (an
    operator who knows their drains are over)."""
    named = set(nodes)
    present: dict[str, bool] = {}

    def exists(node: str) -> bool:
        if node not in present:
            resp = kube.request("GET", f"/api/v1/nodes/{node}")
            if not resp.ok and resp.status != 404:
                raise resp.error(f"get node/{node}")
            present[node] = resp.ok
        return present[node]

    found = []
    for via, path in LISTS.items():
        for obj in _items(kube, path, labelled):
            meta = obj.get("metadata") or {}
            holders = parse_holders((meta.get("annotations") or {}).get(HOLDERS))
            if not holders:
                continue
            deployment = _deployment_of(obj, via)
            if deployment is None:
                continue
            live = _Nodes(exists)
            left = {e.node: e for e in left_behind(holders, now, live)}
            left.update({n: LeftBehind(n, "named on the command line") for n in named & holders.keys()})
            for node, entry in sorted(left.items()):
                found.append(LeftSurge(deployment, node, holders[node].count, via, entry.why))
    return found


def restore_left_behind(kube: Kube, now: float, *, nodes: Iterable[str] = (), labelled: bool = True) -> list[SurgeNote]:
    """Take back every surge left behind (idempotent: an entry restored meanwhile is skipped)."""
    notes = []
    for left in find_left_behind(kube, now, nodes=nodes, labelled=labelled):
        note = restore_entry(kube, left.node, left.deployment, f"left behind by node {left.node}'s drain ({left.why})")
        if note is not None:
            notes.append(note)
    return notes


def restore_staying(kube: Kube, node: str, now: float, why: str) -> list[SurgeNote]:
    """Before a node is made schedulable again (``uncordon``, a return to service): what drains of it surged (its
    record, and entries naming it that lost their record) is taken back, as a verdict would: the node stays, so no
    replacement is needed any more."""
    named = {s.deployment for s in find_left_behind(kube, now, nodes=[node]) if s.node == node}
    return restore_node(kube, node, named, why=why)


class _Nodes:
    """``in``: whether a node exists, asked of the apiserver once per node."""

    def __init__(self, exists: Callable[[str], bool]) -> None:
        self.exists = exists

    def __contains__(self, node: object) -> bool:
        return isinstance(node, str) and self.exists(node)


def _items(kube: Kube, path: str, labelled: bool) -> list[dict[str, Any]]:
    query = {"labelSelector": f"{HELD_LABEL}=true"} if labelled else None
    resp = kube.request("GET", path, query=query)
    if not resp.ok:
        raise resp.error(f"list {path.rsplit('/', 1)[1]}")
    return list(resp.body.get("items") or [])


def _deployment_of(obj: dict[str, Any], via: str) -> str | None:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace", "")
    if via == "deployment":
        return f"{ns}/{meta.get('name', '')}"
    ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
    return f"{ns}/{ref['name']}" if ref.get("kind") == "Deployment" and ref.get("name") else None

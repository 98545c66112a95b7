"""Surges left behind by a drain that never reached its verdict, found and taken back (drain/surge_expiry.py says
which entries; engine/surge.py restores each one as a verdict would).

Surged Deployments and HPAs carry the label ``drain-orchestrator.io/surge-held`` while any entry is in place, so the
Lambda's look (at each drain's verdict) is one filtered LIST of each, answered from the apiserver's cache. The
command line can also look at every Deployment and HPA (``labelled=False``): surges made before the label existed.

The annotations read are on namespaces' own Deployments and HPAs, which their users may write: one object that
cannot be read or restored (a malformed entry, a patch the apiserver refuses) is skipped and said, never a reason
to stop the look for every other namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from drain_orchestrator.clip import clip
from drain_orchestrator.drain.report import SurgeNote
from drain_orchestrator.drain.surge import HELD_LABEL, HOLDERS, SurgeStatus, parse_holders
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


PROBLEM_CHARS = 300


def find_left_behind(
    kube: Kube,
    now: float,
    *,
    nodes: Iterable[str] = (),
    labelled: bool = True,
    problems: list[str] | None = None,
) -> list[LeftSurge]:
    """Every entry left behind at ``now``; entries of ``nodes`` count as left behind whatever their expiry (an
    operator who knows their drains are over). An object that cannot be looked at is skipped, its reason added to
    ``problems``."""
    named = set(nodes)
    present: dict[str, bool] = {}
    uids: dict[str, str] = {}  # the UID of each node found: an entry of another Node object under its name is left

    def exists(node: str) -> bool:
        if node not in present:
            resp = kube.request("GET", f"/api/v1/nodes/{node}")
            if not resp.ok and resp.status != 404:
                raise resp.error(f"get node/{node}")
            present[node] = resp.ok
            if resp.ok and (uid := (resp.body.get("metadata") or {}).get("uid")):
                uids[node] = str(uid)
        return present[node]

    found = []
    for via, path in LISTS.items():
        for obj in _items(kube, path, labelled):
            try:
                found += _left_in(obj, via, now, _Nodes(exists), named, exists, uids)
            except Exception as exc:  # one namespace's object never stops the look at the others
                meta = obj.get("metadata") or {}
                where = f"{via} {meta.get('namespace', '?')}/{meta.get('name', '?')}"
                if problems is not None:
                    problems.append(clip(f"{where} skipped: {type(exc).__name__}: {exc}", PROBLEM_CHARS))
    return found


def _left_in(
    obj: dict[str, Any],
    via: str,
    now: float,
    live: _Nodes,
    named: set[str],
    exists: Callable[[str], bool],
    uids: dict[str, str],
) -> list[LeftSurge]:
    meta = obj.get("metadata") or {}
    holders = parse_holders((meta.get("annotations") or {}).get(HOLDERS))
    deployment = _deployment_of(obj, via) if holders else None
    if deployment is None:
        return []
    for node in holders:  # each holder's node looked up first, so its UID is known to left_behind
        exists(node)
    left = {e.node: e for e in left_behind(holders, now, live, uids)}
    left.update({n: LeftBehind(n, "named on the command line") for n in named & holders.keys()})
    return [LeftSurge(deployment, node, holders[node].count, via, entry.why) for node, entry in sorted(left.items())]


def restore_left_behind(kube: Kube, now: float, *, nodes: Iterable[str] = (), labelled: bool = True) -> list[SurgeNote]:
    """Take back every surge left behind (idempotent: an entry restored meanwhile is skipped). An object that cannot
    be looked at or restored gets a ``failed`` note saying why; the others are restored all the same."""
    problems: list[str] = []
    notes = []
    for left in find_left_behind(kube, now, nodes=nodes, labelled=labelled, problems=problems):
        why = f"left behind by node {left.node}'s drain ({left.why})"
        try:
            note = restore_entry(kube, left.node, left.deployment, why)
        except Exception as exc:  # one namespace's Deployment never stops the others' restore
            detail = clip(f"not restored, {why}: {type(exc).__name__}: {exc}", PROBLEM_CHARS)
            notes.append(SurgeNote(f"Deployment {left.deployment}", SurgeStatus.FAILED.value, detail, [], left.via))
            continue
        if note is not None:
            notes.append(note)
    notes += [SurgeNote(p.split(" skipped:", 1)[0], SurgeStatus.FAILED.value, p) for p in problems]
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

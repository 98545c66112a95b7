"""The controllers of a node's pods, for their drain policy annotations and the DaemonSet filter (raw JSON).

Each controller is looked up once per drain (the drain engine keeps the answers, engine/verdicts.py): a GET, or for
several Deployments of one namespace one metadata-only LIST. A ReplicaSet named ``<deployment>-<hash>`` whose
pods carry that pod-template-hash is a Deployment's (drain/policy.py deployment_key): the Deployment is looked up
directly, and the ReplicaSet only when no such Deployment exists (then its own controller, as it names it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from drain_orchestrator.kube.rest import METADATA_LIST, Kube

OwnerKey = tuple[str, str, str]  # (namespace, kind, name)
# what a lookup found: the controller's metadata; None when it does not exist (404); the message of a failed lookup
Found = dict[str, Any] | str | None

_PATHS = {
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets/{name}",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments/{name}",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets/{name}",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs/{name}",
}
# the kind a node usually has many of in one namespace: looked up with one metadata-only LIST instead of a GET each
# (ReplicaSets are not: a Deployment's are skipped for their Deployment, and ReplicaSets of none are rare)
_LISTS = {"Deployment": "/apis/apps/v1/namespaces/{ns}/deployments"}
LIST_FROM = 2  # one GET costs as much as one LIST
LIST_LIMIT = 500  # one page; names beyond it are looked up one by one


def look_up_owners(kube: Kube, keys: Iterable[OwnerKey]) -> dict[OwnerKey, Found]:
    """(namespace, kind, name) → what the lookup found; a failed lookup is kept as its message, never raised: without
    its controller's annotations a pod still drains by its own (an RBAC role not updated yet must not stop it).

    Several Deployments of one namespace are read with one metadata-only LIST; whatever it does not resolve (a failed
    LIST, a name beyond the page) is looked up by GET."""
    out: dict[OwnerKey, Found] = {}
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    for ns, kind, name in set(keys):
        groups[(ns, kind)].add(name)
    single: list[OwnerKey] = []
    for (ns, kind), names in sorted(groups.items()):
        if kind in _LISTS and len(names) >= LIST_FROM:
            out.update(_listed(kube, ns, kind, names))
        single.extend((ns, kind, n) for n in names if (ns, kind, n) not in out)
    for ns, kind, name in sorted(single):
        resp = kube.request("GET", _PATHS[kind].format(ns=ns, name=name))
        if resp.status == 404:
            out[(ns, kind, name)] = None
        elif not resp.ok:
            out[(ns, kind, name)] = f"get {kind.lower()} {ns}/{name}: {resp.status} {resp.message}"
        else:
            out[(ns, kind, name)] = dict(resp.body.get("metadata") or {})
    return out


def _listed(kube: Kube, ns: str, kind: str, names: set[str]) -> dict[OwnerKey, Found]:
    """What one LIST resolves: the names it returned, and, once it saw the whole namespace, those that do not exist."""
    query: dict[str, Any] = {"limit": LIST_LIMIT}
    resp = kube.request("GET", _LISTS[kind].format(ns=ns), query=query, accept=METADATA_LIST)
    if not resp.ok:
        return {}
    out: dict[OwnerKey, Found] = {}
    for item in resp.body.get("items") or []:
        meta = item.get("metadata") or {}
        if meta.get("name") in names:
            out[(ns, kind, str(meta["name"]))] = dict(meta)
    if not (resp.body.get("metadata") or {}).get("continue"):
        out.update({(ns, kind, n): None for n in names if (ns, kind, n) not in out})
    return out

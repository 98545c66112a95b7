"""The controllers of a node's pods, for their drain policy annotations and the DaemonSet filter (raw JSON).

Each controller is looked up once per drain (the caller caches the answers in its DrainState): a GET, or for several
Deployments of one namespace one metadata-only LIST. A ReplicaSet named ``<deployment>-<hash>`` whose
pods carry that pod-template-hash is a Deployment's (drain/policy.py deployment_key): the Deployment is looked up
directly, and the ReplicaSet only when no such Deployment exists (then its own controller, as it names it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from drain_orchestrator.drain import policy
from drain_orchestrator.drain.classify import Controller, PodInfo, PodVerdict, classify, daemonsets_to_look_up
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.policy import Owner, OwnerKey, PodPolicy
from drain_orchestrator.kube.rest import METADATA_LIST, Kube

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


def look_up_owners(kube: Kube, keys: Iterable[OwnerKey]) -> dict[OwnerKey, Owner]:
    """(namespace, kind, name) → what the lookup found; a failed lookup is kept as its message, never raised: without
    its controller's annotations a pod still drains by its own (an RBAC role not updated yet must not stop it).

    Several Deployments of one namespace are read with one metadata-only LIST; whatever it does not settle (a failed
    LIST, a name beyond the page) is looked up by GET."""
    out: dict[OwnerKey, Owner] = {}
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
            out[(ns, kind, name)] = Owner(False, {})
        elif not resp.ok:
            out[(ns, kind, name)] = Owner(f"get {kind.lower()} {ns}/{name}: {resp.status} {resp.message}", {})
        else:
            out[(ns, kind, name)] = _owner(resp.body.get("metadata") or {})
    return out


def _listed(kube: Kube, ns: str, kind: str, names: set[str]) -> dict[OwnerKey, Owner]:
    """What one LIST settles: the names it returned, and, once it saw the whole namespace, those that do not exist."""
    query: dict[str, Any] = {"limit": LIST_LIMIT}
    resp = kube.request("GET", _LISTS[kind].format(ns=ns), query=query, accept=METADATA_LIST)
    if not resp.ok:
        return {}
    out: dict[OwnerKey, Owner] = {}
    for item in resp.body.get("items") or []:
        meta = item.get("metadata") or {}
        if meta.get("name") in names:
            out[(ns, kind, str(meta["name"]))] = _owner(meta)
    if not (resp.body.get("metadata") or {}).get("continue"):
        out.update({(ns, kind, n): Owner(False, {}) for n in names if (ns, kind, n) not in out})
    return out


def _owner(meta: Mapping[str, Any]) -> Owner:
    controller = None
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            controller = Controller(ref.get("kind", ""), ref.get("apiVersion", ""), ref.get("name", ""))
            break
    return Owner(True, dict(meta.get("annotations") or {}), controller)


@dataclass(frozen=True)
class Classified:
    verdicts: list[PodVerdict]
    policies: dict[str, PodPolicy]  # by pod key
    problems: list[str]  # invalid annotation values, failed controller lookups


def classify_node(
    kube: Kube, pods: list[PodInfo], options: DrainOptions, owners: dict[OwnerKey, Owner], now: float
) -> Classified:
    """kubectl's verdicts with the drain policies on top; ``owners`` is the drain's cache (filled here)."""
    # the pods' controllers (a Deployment's ReplicaSet: its Deployment, by name); when a Deployment named so is not
    # found, its ReplicaSet; then the Deployment that ReplicaSet names
    for _ in range(3):
        wanted = policy.owners_to_look_up(pods, owners)
        wanted |= {(ns, "DaemonSet", name) for ns, name in daemonsets_to_look_up(pods)} - owners.keys()
        if not wanted:
            break
        owners.update(look_up_owners(kube, wanted))
    daemonsets = {(ns, name): o.found for (ns, kind, name), o in owners.items() if kind == "DaemonSet"}
    verdicts = classify(pods, options, now, daemonsets, options.drain_taint)
    policies = {p.key: policy.resolve(p, owners) for p in pods if not p.is_mirror}
    verdicts = policy.apply(
        verdicts,
        policies,
        voluntary=options.voluntary,
        now=now,
        deadline=options.deadline,
        margin=options.deadline_margin,
    )
    used = {k for p in pods if (k := policy.owner_key(p.namespace, p.controller)) is not None}
    problems = [x for pp in policies.values() for x in pp.problems] + policy.owner_problems(owners, used)
    return Classified(verdicts, policies, problems)

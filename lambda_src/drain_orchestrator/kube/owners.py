"""The controllers of a node's pods, for their drain policy annotations and the DaemonSet filter (raw JSON).

One GET per distinct controller per drain (the caller caches the answers in its DrainState); a ReplicaSet's
Deployment is looked up the same way once the ReplicaSet names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from drain_orchestrator.drain import policy
from drain_orchestrator.drain.classify import Controller, PodInfo, PodVerdict, classify, daemonsets_to_look_up
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.policy import Owner, OwnerKey, PodPolicy
from drain_orchestrator.kube.rest import Kube

_PATHS = {
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets/{name}",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments/{name}",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets/{name}",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs/{name}",
}


def look_up_owners(kube: Kube, keys: Iterable[OwnerKey]) -> dict[OwnerKey, Owner]:
    """(namespace, kind, name) → what the GET found; a failed GET is kept as its message, never raised: without
    its controller's annotations a pod still drains by its own (an RBAC role not updated yet must not stop it)."""
    out: dict[OwnerKey, Owner] = {}
    for ns, kind, name in sorted(set(keys)):
        resp = kube.request("GET", _PATHS[kind].format(ns=ns, name=name))
        if resp.status == 404:
            out[(ns, kind, name)] = Owner(False, {})
        elif not resp.ok:
            out[(ns, kind, name)] = Owner(f"get {kind.lower()} {ns}/{name}: {resp.status} {resp.message}", {})
        else:
            meta = resp.body.get("metadata") or {}
            controller = None
            for ref in meta.get("ownerReferences") or []:
                if ref.get("controller"):
                    controller = Controller(ref.get("kind", ""), ref.get("apiVersion", ""), ref.get("name", ""))
                    break
            out[(ns, kind, name)] = Owner(True, dict(meta.get("annotations") or {}), controller)
    return out


@dataclass(frozen=True)
class Classified:
    verdicts: list[PodVerdict]
    policies: dict[str, PodPolicy]  # by pod key
    problems: list[str]  # invalid annotation values, failed controller lookups


def classify_node(
    kube: Kube, pods: list[PodInfo], options: DrainOptions, owners: dict[OwnerKey, Owner], now: float
) -> Classified:
    """kubectl's verdicts with the drain policies on top; ``owners`` is the drain's cache (filled here)."""
    for _ in range(2):  # the pods' controllers, then the Deployments their ReplicaSets name
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

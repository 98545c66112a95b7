"""The verdicts of a node's pods: kubectl's (drain/classify.py) with the drain policies on top (drain/policy.py),
their controllers looked up once per drain (kube/owners.py)."""

from __future__ import annotations

from dataclasses import dataclass

from drain_orchestrator.drain import policy
from drain_orchestrator.drain.classify import PodInfo, PodVerdict, classify, daemonsets_to_look_up
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.policy import Owner, OwnerKey, PodPolicy, owner_of
from drain_orchestrator.kube.owners import look_up_owners
from drain_orchestrator.kube.rest import Kube


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
        owners.update({key: owner_of(found) for key, found in look_up_owners(kube, wanted).items()})
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
        until=options.policy_hold_until,
    )
    used = {k for p in pods if (k := policy.owner_key(p.namespace, p.controller)) is not None}
    problems = [x for pp in policies.values() for x in pp.problems] + policy.owner_problems(owners, used)
    return Classified(verdicts, policies, problems)

"""Surge before evict, against the API: look up the Deployment behind a PDB-refused pod, add its replacement
(Deployment spec.replicas, or the HPA's minReplicas when an HPA manages it), and take the surge back once the
replacement is Ready or when the drain ends. The decisions are in drain/surge.py.

Durability: the node records which Deployments it surged (annotation ``drain-orchestrator.io/surged``) before
the workload is changed, and the workload records its original value and this node's entry in the same PATCH as
the change (resourceVersion precondition). A crash between the two leaves a record that restoring reads and
finds nothing to undo; a replay finds the node's entry and does not surge again.
"""

from __future__ import annotations

from collections.abc import Mapping

from drain_orchestrator.drain.classify import PodInfo, PodVerdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.policy import Owner, OwnerKey, by_name
from drain_orchestrator.drain.report import DrainReport, SurgeNote
from drain_orchestrator.drain.surge import (
    NODE_RECORD,
    DeploymentFacts,
    SurgeFacts,
    SurgeStatus,
    decide,
    parse_node_record,
    pdb_never_allows,
    replacement_ready,
    surge_enabled,
)
from drain_orchestrator.drain.surge_expiry import expiry_of
from drain_orchestrator.drain.workload_reads import selector_string, unschedulable_message
from drain_orchestrator.engine.surge_restore import (
    RETRIES,
    apply_scale,
    deployment_path,
    hpa_of,
    read_record,
    read_workload,
    restore_one,
    surge_event,
    write_record,
)
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.node_identity import NodeIdentity

UNSUPPORTED = {
    "StatefulSet": "StatefulSet pods keep their identity: no replacement can run beside the original",
    "ReplicaSet": "a ReplicaSet without a Deployment: scaling it by hand is not undone by any controller",
}


def surge_pass(
    kube: Kube,
    node: str,
    report: DrainReport,
    verdicts: list[PodVerdict],
    facts: SurgeFacts,
    options: DrainOptions,
    owners: Mapping[OwnerKey, Owner] | None = None,
) -> None:
    """After a pass's evictions: surge for the pass's PDB-refused pods of Deployments, say which cannot surge, and
    take back surges whose replacement is Ready. Adds one note per workload to ``report.surge``. ``owners``: the
    drain's controller lookups (kube/owners.py), so a ReplicaSet's Deployment, and a Deployment that does not ask
    for a surge, need no request of their own."""
    owners = owners or {}
    for (ns, kind, name), o in owners.items():
        if kind == "ReplicaSet" and o.found is True:
            parent = o.controller.name if o.controller is not None and o.controller.kind == "Deployment" else None
            facts.owners.setdefault(f"{ns}/{name}", parent)
    if not facts.loaded:
        facts.in_place.update(read_record(kube, node, options.node_pin) or [])
        facts.loaded = True
    pods = {v.pod.key: v.pod for v in verdicts}
    by_deployment: dict[str, list[str]] = {}
    for b in report.blocked:
        pod = pods.get(b.pod)
        if pod is None or not b.pdbs:  # only a refusal naming its budget: "multiple PDBs" is no surge case
            continue
        c = pod.controller
        kind = c.kind if c else "Pod"
        workload = f"{kind} {pod.namespace}/{c.name if c else pod.name}"
        try:
            owner = (
                _replicasets_deployment(kube, pod, facts, options, node, owners)
                if c and c.kind == "ReplicaSet"
                else None
            )
        except Exception as exc:
            _note(report, SurgeNote(workload, SurgeStatus.FAILED.value, f"surge failed: {exc}", [pod.key]))
            continue
        if owner is not None:
            by_deployment.setdefault(f"{pod.namespace}/{owner}", []).append(pod.key)
            continue
        why = UNSUPPORTED.get(kind, f"{kind} is not a Deployment: only Deployments can surge")
        _note(report, SurgeNote(workload, SurgeStatus.UNSUPPORTED.value, f"cannot surge: {why}", [pod.key]))
    for key, keys in sorted(by_deployment.items()):
        try:
            _surge_one(kube, node, key, keys, report, facts, options, owners)
        except Exception as exc:  # a surge that fails leaves the drain as it was: PDB-aware retries, the deadline
            _note(report, SurgeNote(f"Deployment {key}", SurgeStatus.FAILED.value, f"surge failed: {exc}", keys))
    for key in sorted(facts.in_place - by_deployment.keys()):
        try:
            name = key.split("/", 1)[1]
            left = [v.pod.key for v in verdicts if not v.pod.is_terminating and _owner_key(kube, v, facts, name) == key]
            _restore_if_ready(kube, node, key, len(left), report, facts, options.node_pin)
        except Exception as exc:  # restored at the verdict at the latest
            report.warnings.append(f"restoring the surge of Deployment {key} failed (retried): {exc}")


def _surge_one(
    kube: Kube,
    node: str,
    key: str,
    pods: list[str],
    report: DrainReport,
    facts: SurgeFacts,
    options: DrainOptions,
    owners: Mapping[OwnerKey, Owner],
) -> None:
    ns, name = key.split("/", 1)
    workload = f"Deployment {key}"
    if key in facts.decided:  # not enabled, or a budget that never opens: no need to look again this drain
        status, detail = facts.decided[key]
        _note(report, SurgeNote(workload, status, detail, pods))
        return
    dep = _as_looked_up(owners, (ns, "Deployment", name))
    if dep is None or _may_surge(options, dep, node):
        got = kube.request("GET", deployment_path(ns, name))
        if not got.ok:
            raise got.error(f"get deployment {key}")
        dep = DeploymentFacts.from_dict(got.body)
    if not surge_enabled(options.surge, dep) and node not in dep.holders:
        decision = decide(options.surge, dep, None, node, options.run_id or "", len(pods))
        facts.decided[key] = (decision.status.value, decision.detail)
        _note(report, SurgeNote(workload, decision.status.value, decision.detail, pods))
        return
    hpa = hpa_of(kube, ns, name)
    never = _never_allowing(kube, ns, report, pods)
    expires = expiry_of(options.deadline)
    recorded = False
    for _ in range(RETRIES):
        uid = options.node_pin.uid if options.node_pin is not None else None
        decision = decide(
            options.surge,
            dep,
            hpa,
            node,
            options.run_id or "",
            len(pods),
            never,
            expires,
            uid=uid,
            limit=options.surge_max_replicas,
        )
        if decision.patch is None:
            break
        facts.in_place.add(key)
        if not recorded:  # first: whatever happens next, restoring knows where to look
            write_record(kube, node, add=key, pin=options.node_pin)
            recorded = True
        if apply_scale(kube, ns, name, hpa, decision.patch):
            break
        # 409: the workload changed since it was read; most often only its status (the HPA controller writes the
        # HPA's at every sync), so read both again and decide on what is there now, not at the next pass (that
        # may be a held wait away, the deadline's force)
        found = read_workload(kube, ns, name)
        if found is None:
            return  # deleted meanwhile: its pods go with it
        dep, hpa = found
    else:
        return  # changed under every read: decided again next pass
    note = SurgeNote(workload, decision.status.value, decision.detail, pods)
    if decision.status is SurgeStatus.FUTILE:
        facts.decided[key] = (decision.status.value, decision.detail)
    if decision.patch is not None:
        p = decision.patch
        note = SurgeNote(workload, note.status, note.detail, pods, p.via, p.before, p.after)
        surge_event(kube, dep, "SurgeBeforeEvict", f"{decision.detail} so that {', '.join(pods)} on node {node} can go")
    elif decision.status is SurgeStatus.SURGED:
        facts.in_place.add(key)
        stuck = _unschedulable(kube, dep)
        if stuck is not None:
            note = SurgeNote(
                workload, SurgeStatus.UNSCHEDULABLE.value, f"replacement cannot be scheduled: {stuck}", pods
            )
    _note(report, note)


def _restore_if_ready(
    kube: Kube, node: str, key: str, left: int, report: DrainReport, facts: SurgeFacts, pin: NodeIdentity | None
) -> None:
    ns, name = key.split("/", 1)
    got = kube.request("GET", deployment_path(ns, name))
    if got.status == 404:
        facts.in_place.discard(key)
        write_record(kube, node, remove=key, pin=pin)
        return
    if not got.ok:
        return
    dep = DeploymentFacts.from_dict(got.body)
    hpa = hpa_of(kube, ns, name)
    if not replacement_ready(dep, hpa, left):
        return
    note = restore_one(kube, node, dep, hpa, "the replacement is Ready", pin)
    facts.in_place.discard(key)
    if note is not None:
        _note(report, note)


def _as_looked_up(owners: Mapping[OwnerKey, Owner], key: OwnerKey) -> DeploymentFacts | None:
    """The Deployment as the drain's controller lookup saw it (metadata only), when found."""
    looked_up = owners.get(key)
    if looked_up is None or looked_up.found is not True:
        return None
    meta = {"namespace": key[0], "name": key[2], "annotations": looked_up.annotations}
    return DeploymentFacts.from_dict({"metadata": meta})


def _may_surge(options: DrainOptions, dep: DeploymentFacts, node: str) -> bool:
    """Whether the Deployment's annotations leave a surge (or one of this node's to take back) possible."""
    return surge_enabled(options.surge, dep) or node in dep.holders


def _replicasets_deployment(
    kube: Kube, pod: PodInfo, facts: SurgeFacts, options: DrainOptions, node: str, owners: Mapping[OwnerKey, Owner]
) -> str | None:
    """The Deployment of a pod's ReplicaSet. Found by the ReplicaSet's name (drain/policy.py by_name) it is enough
    to say "no surge" from; one to surge is confirmed by the ReplicaSet's owner reference before it is scaled."""
    assert pod.controller is not None
    named = by_name(pod, owners)
    dep = _as_looked_up(owners, named) if named is not None else None
    if dep is not None and not _may_surge(options, dep, node):
        return dep.name
    return _deployment_of(kube, pod.namespace, pod.controller.name, facts)


def _deployment_of(kube: Kube, ns: str, replicaset: str, facts: SurgeFacts) -> str | None:
    key = f"{ns}/{replicaset}"
    if key not in facts.owners:
        resp = kube.request("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets/{replicaset}")
        if not resp.ok and resp.status != 404:
            raise resp.error(f"get replicaset {key}")
        refs = (resp.body.get("metadata") or {}).get("ownerReferences") or [] if resp.ok else []
        owner = next((r for r in refs if r.get("controller") and r.get("kind") == "Deployment"), None)
        facts.owners[key] = owner.get("name") if owner else None
    return facts.owners[key]


def _owner_key(kube: Kube, v: PodVerdict, facts: SurgeFacts, deployment: str) -> str | None:
    c = v.pod.controller
    if c is None or c.kind != "ReplicaSet" or not c.name.startswith(deployment + "-"):
        return None  # a Deployment names its ReplicaSets "<deployment>-<template hash>": others need no lookup
    owner = _deployment_of(kube, v.pod.namespace, c.name, facts)
    return f"{v.pod.namespace}/{owner}" if owner else None


def _never_allowing(kube: Kube, ns: str, report: DrainReport, pods: list[str]) -> list[str]:
    names = {p for b in report.blocked if b.pod in pods for p in b.pdbs}
    resp = kube.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets")
    items = resp.body.get("items") or [] if resp.ok else []
    return sorted(
        (p.get("metadata") or {}).get("name", "")
        for p in items
        if (p.get("metadata") or {}).get("name") in names and pdb_never_allows(p)
    )


def _unschedulable(kube: Kube, dep: DeploymentFacts) -> str | None:
    selector = selector_string(dep.selector)
    if not selector:
        return None
    resp = kube.request("GET", f"/api/v1/namespaces/{dep.namespace}/pods", query={"labelSelector": selector})
    return unschedulable_message(resp.body.get("items") or []) if resp.ok else None


def record_seen(facts: SurgeFacts, annotations: Mapping[str, str]) -> None:
    """The node's surge record as another read of the node found it (the pass's cordon): no GET of its own."""
    if not facts.loaded:
        facts.in_place.update(parse_node_record(annotations.get(NODE_RECORD)) or [])
        facts.loaded = True


def _note(report: DrainReport, note: SurgeNote) -> None:
    report.surge = [n for n in report.surge if n.workload != note.workload] + [note]

"""Taking a surge back, and the records a surge leaves (engine/surge.py makes them): the node's list of the
Deployments it surged (annotation ``drain-orchestrator.io/surged``), each Deployment's original figure and holders.

A surge is taken back once its replacement is Ready (the pass), when the drain ends (its verdict: ``restore_node``)
or, left behind by a drain that never ended, by the sweep (engine/surge_sweep.py: ``restore_entry``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from drain_orchestrator.drain.report import SurgeNote
from drain_orchestrator.drain.surge import (
    NODE_RECORD,
    DeploymentFacts,
    HpaFacts,
    ScalePatch,
    SurgeStatus,
    hpa_targets,
    parse_node_record,
    restore,
)
from drain_orchestrator.engine.clock import CLOCK
from drain_orchestrator.kube.errors import KubeError, NodeGone
from drain_orchestrator.kube.node_marks import AnnotationChange, read_node_fresh, update_annotations
from drain_orchestrator.kube.node_records import COMPONENT
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.node_identity import NodeIdentity

MERGE_PATCH = "application/merge-patch+json"
RETRIES = 5


def deployment_path(ns: str, name: str) -> str:
    return f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"


def hpa_path(ns: str, name: str = "") -> str:
    return f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers" + (f"/{name}" if name else "")


def restore_node(
    kube: Kube,
    node: str,
    workloads: Iterable[str] = (),
    why: str = "the drain has ended",
    pin: NodeIdentity | None = None,
) -> list[SurgeNote]:
    """Take back every surge this node still holds (its record, plus ``workloads`` "ns/name" from the drain's
    report in case the node is gone): the drain's verdict. Idempotent; a workload already restored is skipped.
    ``pin``: the Node object the drain surged for; the record of another Node under the name is not read."""
    keys = set(workloads) | set(read_record(kube, node, pin) or [])
    notes = [restore_entry(kube, node, key, why, pin) for key in sorted(keys)]
    return [n for n in notes if n is not None]


def restore_entry(kube: Kube, node: str, key: str, why: str, pin: NodeIdentity | None = None) -> SurgeNote | None:
    """Take back one node's surge of Deployment ``key`` ("ns/name"), whatever drain made it (surges left behind,
    engine/surge_sweep.py). None: nothing of that node's was in place, or the Deployment is gone."""
    ns, name = key.split("/", 1)
    found = read_workload(kube, ns, name)
    if found is None:
        write_record(kube, node, remove=key, pin=pin)
        return None
    return restore_one(kube, node, *found, why, pin=pin)


def restore_one(
    kube: Kube, node: str, dep: DeploymentFacts, hpa: HpaFacts | None, why: str, pin: NodeIdentity | None = None
) -> SurgeNote | None:
    for _ in range(RETRIES):
        patch = restore(dep, hpa, node, pin.uid if pin is not None else None)
        if patch is None:
            write_record(kube, node, remove=dep.key, pin=pin)
            return None
        if apply_scale(kube, dep.namespace, dep.name, hpa, patch):
            write_record(kube, node, remove=dep.key, pin=pin)
            field = "HPA minReplicas" if patch.via == "hpa" else "replicas"
            detail = f"{field} {patch.before} -> {patch.after}: {why}"
            surge_event(kube, dep, "SurgeRestored", f"{detail} (node {node})")
            return SurgeNote(
                f"Deployment {dep.key}", SurgeStatus.RESTORED.value, detail, [], patch.via, patch.before, patch.after
            )
        found = read_workload(kube, dep.namespace, dep.name)  # 409: read both again
        if found is None:
            return None
        dep, hpa = found
    return None


def read_workload(kube: Kube, ns: str, name: str) -> tuple[DeploymentFacts, HpaFacts | None] | None:
    """The Deployment and the HPA that manages it (None: the Deployment is gone)."""
    got = kube.request("GET", deployment_path(ns, name))
    if got.status == 404:
        return None
    if not got.ok:
        raise got.error(f"get deployment {ns}/{name}")
    return DeploymentFacts.from_dict(got.body), hpa_of(kube, ns, name)


def apply_scale(kube: Kube, ns: str, name: str, hpa: HpaFacts | None, patch: ScalePatch) -> bool:
    path = hpa_path(ns, hpa.name) if patch.via == "hpa" and hpa is not None else deployment_path(ns, name)
    resp = kube.request("PATCH", path, body=patch.body, content_type=MERGE_PATCH)
    if resp.ok:
        return True
    if resp.status == 409:
        return False
    raise resp.error(f"patch {path}")


def hpa_of(kube: Kube, ns: str, deployment: str) -> HpaFacts | None:
    resp = kube.request("GET", hpa_path(ns))
    if not resp.ok:
        raise resp.error(f"list horizontalpodautoscalers in {ns}")
    found = next((h for h in resp.body.get("items") or [] if hpa_targets(h, deployment)), None)
    return HpaFacts.from_dict(found) if found else None


def read_record(kube: Kube, node: str, pin: NodeIdentity | None = None) -> list[str] | None:
    try:
        body = read_node_fresh(kube, node, pin)  # a view of a moment ago (the settle's write) will do
    except KubeError:
        return None
    return parse_node_record(((body.get("metadata") or {}).get("annotations") or {}).get(NODE_RECORD))


def write_record(
    kube: Kube, node: str, *, add: str | None = None, remove: str | None = None, pin: NodeIdentity | None = None
) -> None:
    """Add or remove one Deployment in the node's record (conditioned on the annotations read; a gone node, or
    one replaced under a ``pin``, has none)."""

    def edit(annotations: Mapping[str, str]) -> AnnotationChange | None:
        keys = parse_node_record(annotations.get(NODE_RECORD))
        wanted = sorted((set(keys) | ({add} if add else set())) - ({remove} if remove else set()))
        if wanted == sorted(keys):
            return None
        return {NODE_RECORD: json.dumps(wanted, separators=(",", ":")) if wanted else None}

    with contextlib.suppress(NodeGone):
        update_annotations(kube, node, edit, attempts=RETRIES, pin=pin)


def surge_event(kube: Kube, dep: DeploymentFacts, reason: str, message: str) -> None:
    """A core/v1 Event on the Deployment (best effort, like the node's Events)."""
    now = dt.datetime.fromtimestamp(CLOCK.wall(), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{dep.name}.{secrets.token_hex(8)}", "namespace": dep.namespace},
        "involvedObject": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": dep.name,
            "namespace": dep.namespace,
            "uid": dep.uid,
        },
        "reason": reason,
        "message": message[:1024],
        "type": "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    with contextlib.suppress(Exception):
        kube.request("POST", f"/api/v1/namespaces/{dep.namespace}/events", body=body)

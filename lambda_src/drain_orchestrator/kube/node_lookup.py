"""Find the Kubernetes Node of an EC2 instance: by private DNS name, by providerID, by instance-id name."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from drain_orchestrator.kube.node_marks import get_node
from drain_orchestrator.kube.recent import NODES, WRITE_BASE_SECONDS, remember_node
from drain_orchestrator.kube.rest import METADATA_LIST, Kube
from drain_orchestrator.node_identity import NodeIdentity, instance_id_from_provider_id

ZONE_LABEL = "topology.kubernetes.io/zone"
_NOT_FOUND = 404


def find_node(
    kube: Kube,
    instance_id: str,
    private_dns_name: str | None,
    az: str | None,
    *,
    page_size: int = 200,
) -> str | None:
    """Name of the node backing `instance_id`, or None. Read-only (get/list nodes)."""
    # 1. EKS AMIs name the node after the EC2 PrivateDnsName; confirm it is this instance, names get reused.
    if private_dns_name:
        node = read_node(kube, private_dns_name)
        if node is not None and instance_id_from_provider_id(_provider_id(node)) == instance_id:
            return private_dns_name
    # 2. No field selector exists for spec.providerID: list (narrowed by zone when known) and compare.
    selector = f"{ZONE_LABEL}={az}" if az else None
    found = _scan_provider_ids(kube, instance_id, selector, page_size)
    if found is not None:
        return found
    # 3. Auto Mode, kOps and Bottlerocket's instance-id naming use the instance id as the node name.
    node = read_node(kube, instance_id)
    return instance_id if node is not None else None


def read_node(kube: Kube, name: str) -> dict[str, Any] | None:
    """The Node as JSON, None when there is none; other answers raise KubeError."""
    resp = kube.request("GET", f"/api/v1/nodes/{quote(name, safe='')}")
    if resp.status == _NOT_FOUND:
        return None
    if not resp.ok:
        raise resp.error(f"get node/{name}")
    remember_node(kube, resp.body)  # the cordon that follows writes on it without a GET
    return resp.body


def identity_of(kube: Kube, name: str, pin: NodeIdentity | None = None) -> NodeIdentity:
    """The identity of the Node ``name`` (node_identity.py), completing ``pin``: from this client's view of a moment
    ago (the lookup's read, a cordon's answer) when there is one of the pinned object, else a GET (NodeGone,
    NodeReplaced)."""
    seen = NODES.get(kube, name, WRITE_BASE_SECONDS)
    body = seen if seen is not None and (pin is None or pin.matches(seen)) else get_node(kube, name, pin)
    return (pin or NodeIdentity()).learned(body)


def node_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _provider_id(node: dict[str, Any]) -> str | None:
    value = (node.get("spec") or {}).get("providerID")
    return str(value) if value else None


def _scan_provider_ids(kube: Kube, instance_id: str, selector: str | None, page_size: int) -> str | None:
    token: str | None = None
    while True:
        query = {"limit": page_size, "labelSelector": selector, "continue": token}
        resp = kube.request("GET", "/api/v1/nodes", query=query)
        if not resp.ok:
            raise resp.error("list nodes")
        for node in resp.body.get("items") or []:
            if instance_id_from_provider_id(_provider_id(node)) == instance_id:
                name = (node.get("metadata") or {}).get("name")
                remember_node(kube, node)  # the locate step reads its identity, the cordon writes on it: no GET
                return str(name) if name else None
        token = (resp.body.get("metadata") or {}).get("continue") or None
        if not token:
            return None


def cordoned_annotations(kube: Kube, *, page_size: int = 500) -> list[dict[str, str]] | None:
    """The annotations of every cordoned node: one metadata-only LIST of the unschedulable nodes a page; None when the
    LIST fails (the caller goes on without knowing)."""
    out: list[dict[str, str]] = []
    token = None
    while True:
        query = {"fieldSelector": "spec.unschedulable=true", "limit": page_size, "continue": token}
        resp = kube.request("GET", "/api/v1/nodes", query=query, accept=METADATA_LIST)
        if not resp.ok:
            return None
        out += [dict((n.get("metadata") or {}).get("annotations") or {}) for n in resp.body.get("items") or []]
        token = (resp.body.get("metadata") or {}).get("continue") or None
        if not token:
            return out

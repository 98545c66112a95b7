"""Find the Kubernetes Node of an EC2 instance: by private DNS name, by providerID, by instance-id name."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from drain_orchestrator.kube.errors import translated

ZONE_LABEL = "topology.kubernetes.io/zone"
_NOT_FOUND = 404


def instance_id_from_provider_id(provider_id: str | None) -> str | None:
    """`aws:///us-east-1a/i-0abc` (or `aws:////i-0abc`, or bare `i-0abc`) → `i-0abc`; Fargate etc. → None."""
    if not provider_id:
        return None
    last = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return last if last.startswith("i-") else None


@translated
def find_node(
    core: k8s.CoreV1Api,
    instance_id: str,
    private_dns_name: str | None,
    az: str | None,
    *,
    page_size: int = 200,
) -> str | None:
    """Name of the node backing `instance_id`, or None. Read-only (get/list nodes)."""
    # 1. EKS AMIs name the node after the EC2 PrivateDnsName; confirm it is this instance, names get reused.
    if private_dns_name:
        node = _get(core, private_dns_name)
        if node is not None and instance_id_from_provider_id(node.spec.provider_id if node.spec else None) == (
            instance_id
        ):
            return private_dns_name
    # 2. No field selector exists for spec.providerID: list (narrowed by zone when known) and compare.
    selector = f"{ZONE_LABEL}={az}" if az else None
    found = _scan_provider_ids(core, instance_id, selector, page_size)
    if found is not None:
        return found
    # 3. Auto Mode, kOps and Bottlerocket's instance-id naming use the instance id as the node name.
    node = _get(core, instance_id)
    return instance_id if node is not None else None


def _get(core: k8s.CoreV1Api, name: str) -> Any:
    try:
        return core.read_node(name)
    except ApiException as exc:
        if exc.status == _NOT_FOUND:
            return None
        raise


def _scan_provider_ids(core: k8s.CoreV1Api, instance_id: str, selector: str | None, page_size: int) -> str | None:
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": page_size}
        if selector:
            kwargs["label_selector"] = selector
        if token:
            kwargs["_continue"] = token
        page = core.list_node(**kwargs)
        for node in page.items or []:
            if node.spec is not None and instance_id_from_provider_id(node.spec.provider_id) == instance_id:
                return str(node.metadata.name) if node.metadata else None
        token = page.metadata.var_continue if page.metadata else None
        if not token:
            return None

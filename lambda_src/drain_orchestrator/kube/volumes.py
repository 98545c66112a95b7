"""VolumeAttachments of a node (storage.k8s.io/v1), for the volume gate (workflow/gates.py; which of them hold it:
engine/volumes.py).

The apiserver offers no field selector on ``spec.nodeName`` for VolumeAttachments, so the list is filtered here,
in chunks like kubectl's. A detached volume's VolumeAttachment is deleted by the attach/detach controller once the
CSI driver reports the detach, so "none left for the node" means every volume can attach elsewhere.

The list is cluster-wide (a page per 500 attachments), so it is skipped when this client's view of the Node (the
cordon's answer, at most half a minute old) records no volume attached (the attach/detach controller's
``status.volumesAttached``) and none in use (the kubelet's ``status.volumesInUse``): a node that had no volume when it
was cordoned gets none after, as nothing is scheduled on it then but DaemonSet pods, whose volumes do not hold the
gate. (An attach still in progress at the cordon, for a pod bound moments before, is not in the status yet: that
one volume is not waited on.) Without such a view (a replay in a new container, the status CLI), or when it records
any volume, the list decides.
"""

from __future__ import annotations

from collections.abc import Iterable

from drain_orchestrator.kube.pods import CHUNK_SIZE
from drain_orchestrator.kube.recent import NODES, WRITE_BASE_SECONDS
from drain_orchestrator.kube.rest import Kube

PATH = "/apis/storage.k8s.io/v1/volumeattachments"


def _none_recorded(kube: Kube, node: str) -> bool:
    """This client's recent view of the node records no volume attached or in use."""
    seen = NODES.aged(kube, node, WRITE_BASE_SECONDS)
    if seen is None:
        return False
    status = seen[1].get("status") or {}
    return not status.get("volumesAttached") and not status.get("volumesInUse")


def _list(kube: Kube, node: str) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    token: str | None = None
    while True:
        resp = kube.request("GET", PATH, query={"limit": CHUNK_SIZE, "continue": token})
        if not resp.ok:
            raise resp.error("list volumeattachments")
        for item in resp.body.get("items") or []:
            spec = item.get("spec") or {}
            if spec.get("nodeName") == node:
                name = (item.get("metadata") or {}).get("name", "")
                found.append((name, (spec.get("source") or {}).get("persistentVolumeName")))
        token = (resp.body.get("metadata") or {}).get("continue") or None
        if not token:
            return found


def claimed_volumes(kube: Kube, claims: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """PersistentVolume name → the pod ("ns/name") whose claim (namespace, claim, pod key) is bound to it."""
    out: dict[str, str] = {}
    for ns, claim, pod in sorted(set(claims)):
        resp = kube.request("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{claim}")
        if not resp.ok:
            # 404: gone, nothing of it is attached for that pod; any other error (an RBAC role not updated yet):
            # its volume keeps holding the gate, as it did before volumes were matched to pods
            continue
        volume = (resp.body.get("spec") or {}).get("volumeName")
        if volume:
            out[volume] = pod
    return out


def node_volume_attachments(kube: Kube, node: str) -> list[tuple[str, str | None]]:
    """The node's VolumeAttachments: (name, PersistentVolume name or None); none when this client's recent view of the
    node records no volume attached or in use."""
    return [] if _none_recorded(kube, node) else _list(kube, node)

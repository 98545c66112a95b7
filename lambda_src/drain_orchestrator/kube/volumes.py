"""VolumeAttachments of a node (storage.k8s.io/v1), for the volume gate (workflow/gates.py).

The apiserver offers no field selector on ``spec.nodeName`` for VolumeAttachments, so the list is filtered here,
in chunks like kubectl's. A detached volume's VolumeAttachment is deleted by the attach/detach controller once the
CSI driver reports the detach, so "none left for the node" means every volume can attach elsewhere.
"""

from __future__ import annotations

from drain_orchestrator.kube.pods import CHUNK_SIZE
from drain_orchestrator.kube.rest import Kube

PATH = "/apis/storage.k8s.io/v1/volumeattachments"


def node_attachments(kube: Kube, node: str) -> list[str]:
    """``<attachment name> (<persistent volume name>)`` of every VolumeAttachment on ``node``, sorted."""
    found: list[str] = []
    token: str | None = None
    while True:
        resp = kube.request("GET", PATH, query={"limit": CHUNK_SIZE, "continue": token})
        if not resp.ok:
            raise resp.error("list volumeattachments")
        for item in resp.body.get("items") or []:
            spec = item.get("spec") or {}
            if spec.get("nodeName") != node:
                continue
            name = (item.get("metadata") or {}).get("name", "")
            pv = (spec.get("source") or {}).get("persistentVolumeName")
            found.append(f"{name} ({pv})" if pv else name)
        token = (resp.body.get("metadata") or {}).get("continue") or None
        if not token:
            return sorted(found)

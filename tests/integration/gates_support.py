"""Volumes around a drain on the test bed: VolumeAttachments as the attach/detach controller keeps them, released by
a test actor. Load balancers: testbed/load_balancers.py."""

from __future__ import annotations

import contextlib
import threading

from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.kube import KubeScenario


class VolumeAttachments:
    """VolumeAttachments on a node, as the attach/detach controller keeps them for attached CSI volumes, with the
    volume recorded in the node's ``status.volumesAttached`` and ``status.volumesInUse`` (kwok's heartbeat keeps
    both)."""

    def __init__(self, k8s: KubeScenario) -> None:
        self.storage = client.StorageV1Api(k8s.api_client)
        self.core = k8s.core
        self.names: list[str] = []
        self.nodes: dict[str, tuple[str, str]] = {}  # attachment → (node, its unique volume name)
        self._lock = threading.Lock()  # a release timer and the test may record on one node at once

    def _record(self, node: str, volume: str, attached: bool) -> None:
        with self._lock:
            status = self.core.read_node_status(node).status
            have = [v.name for v in status.volumes_attached or []]
            names = sorted({*have, volume} if attached else set(have) - {volume})
            self._patch(node, names)

    def _patch(self, node: str, names: list[str]) -> None:
        self.core.patch_node_status(
            node,
            [
                {
                    "op": "add",
                    "path": "/status/volumesAttached",
                    "value": [{"name": n, "devicePath": ""} for n in names],
                },
                {"op": "add", "path": "/status/volumesInUse", "value": names},
            ],
        )

    def attach(self, node: str, pv: str) -> str:
        name = f"csi-{node[:20]}-{pv}".replace(".", "-")
        self.storage.create_volume_attachment(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "VolumeAttachment",
                "metadata": {"name": name},
                "spec": {"attacher": "ebs.csi.aws.com", "nodeName": node, "source": {"persistentVolumeName": pv}},
            }
        )
        self.names.append(name)
        volume = f"kubernetes.io/csi/ebs.csi.aws.com^{pv}"
        self._record(node, volume, attached=True)
        self.nodes[name] = (node, volume)
        return name

    def release_after(self, name: str, seconds: float) -> threading.Timer:
        """The CSI driver reports the detach ``seconds`` from now: the attachment is deleted."""
        timer = threading.Timer(seconds, lambda: self.delete(name))
        timer.daemon = True
        timer.start()
        return timer

    def release_once_drained(self, name: str, k8s: KubeScenario, node: str, app: str, seconds: float) -> None:
        """The CSI driver reports the detach ``seconds`` after the last ``app`` pod left ``node`` (the drain's
        last LIST and the gate's first check come after that)."""

        def run() -> None:
            k8s.wait_for(lambda: not k8s.pods(f"app={app}", node=node), timeout=120, what=f"{app} pods gone")
            self.release_after(name, seconds)

        threading.Thread(target=run, daemon=True).start()

    def delete(self, name: str) -> None:
        with contextlib.suppress(ApiException):
            self.storage.delete_volume_attachment(name)
        if name in self.nodes:
            node, volume = self.nodes.pop(name)
            with contextlib.suppress(ApiException):  # the node may be gone with its instance
                self._record(node, volume, attached=False)

    def exists(self, name: str) -> bool:
        try:
            self.storage.read_volume_attachment(name)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def cleanup(self) -> None:
        for name in self.names:
            self.delete(name)


def bound_claim(k8s: KubeScenario, claim: str, pv: str) -> None:
    """A PersistentVolume and its claim, bound to each other up front (as a CSI provisioner leaves them)."""
    core = k8s.core
    core.create_persistent_volume(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "persistentVolumeReclaimPolicy": "Retain",
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": f"vol-{pv}"},
                "claimRef": {"namespace": k8s.ns, "name": claim},
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(
        k8s.ns,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            # bound as the PV controller leaves a claim (the bed runs none): the scheduler places its pods
            "metadata": {"name": claim, "namespace": k8s.ns, "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "volumeName": pv,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    core.patch_namespaced_persistent_volume_claim_status(claim, k8s.ns, {"status": {"phase": "Bound"}})


def delete_volumes(k8s: KubeScenario, pvs: list[str]) -> None:
    for pv in pvs:
        with contextlib.suppress(ApiException):
            k8s.core.delete_persistent_volume(pv)


def claim_volume(claim: str) -> dict[str, object]:
    return {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}

"""Which of a node's VolumeAttachments hold the volume gate (workflow/gates.py): all of them, except those of pods
the drain leaves on the node on purpose (DaemonSet pods kept, mirror pods, drain policy ``skip``): like Karpenter's
volume phase, those stay attached until the instance goes. They are found pod → PersistentVolumeClaim → its
``spec.volumeName``, and only when the node has attachments at all (kube/volumes.py lists them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from drain_orchestrator.drain.classify import PodInfo, Verdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.engine.clock import CLOCK
from drain_orchestrator.engine.verdicts import classify_node
from drain_orchestrator.kube.pods import list_node_pods
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.volumes import claimed_volumes, node_volume_attachments


@dataclass(frozen=True)
class Attachments:
    holding: list[str] = field(default_factory=list)  # "<attachment> (<pv>)", sorted
    ignored: list[str] = field(default_factory=list)  # of pods left on purpose: "<attachment> (<pv>) for ns/pod"


def node_attachments(kube: Kube, node: str, options: DrainOptions | None = None) -> Attachments:
    """The node's VolumeAttachments that hold the gate; with ``options`` (the drain's), those of pods the drain
    leaves on purpose are set apart."""
    listed = node_volume_attachments(kube, node)
    if not listed or options is None or not any(pv for _, pv in listed):
        return Attachments(holding=sorted(f"{n} ({pv})" if pv else n for n, pv in listed))
    pods = [PodInfo.from_dict(p) for p in list_node_pods(kube, node)]
    verdicts = classify_node(kube, pods, options, {}, CLOCK.wall()).verdicts
    kept = [(v.pod.namespace, c, v.pod.key) for v in verdicts if v.verdict is Verdict.SKIP for c in v.pod.claims]
    theirs = claimed_volumes(kube, kept) if kept else {}
    holding, ignored = [], []
    for name, pv in listed:
        label = f"{name} ({pv})" if pv else name
        if pv is not None and pv in theirs:
            ignored.append(f"{label} for {theirs[pv]}")
        else:
            holding.append(label)
    return Attachments(sorted(holding), sorted(ignored))

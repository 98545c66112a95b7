"""Surge before evict, the decisions (pure): when a pod's PodDisruptionBudget allows no disruption and the pod
belongs to a Deployment, add its replacement first and let the eviction go through once the budget allows it.

The orchestrator never decides *whether* an eviction keeps the promise of the PDB: the eviction API does. Surging
only makes the budget able to allow one, by adding replicas; the drain's usual PDB watch retries the eviction the
moment the new replica is Ready (docs/drain.md, "Surge before evict").

What is changed on a workload is recorded on it, in annotations, before or with the change itself:
``surge-original-*`` holds the value before the first surge, ``surge-holders`` which nodes surged it and by how
many replicas (``{"<node>": {"count": 1, "run": "<run id>", "uid": "<the Node object's UID>"}}``). A replay or a
second execution for the same node finds its entry and never adds to it; another node's drain adds its own entry;
restoring removes this node's entry and subtracts its count, so the value goes back to the original once the last
holder is gone. Each entry carries
``expires`` (the drain's deadline plus a margin, drain/surge_expiry.py) and the workload the label ``surge-held``
while any entry is in place, so a surge whose drain was lost before its verdict can be found and taken back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from drain_orchestrator.drain.surge_bound import surge_room
from drain_orchestrator.surge_mode import SurgeMode  # a setting (SURGE_BLOCKED_PODS)

PREFIX = "drain-orchestrator.io/"
SURGE_ANNOTATION = PREFIX + "surge"  # on the Deployment: "true" opts in (mode annotated), "false" opts out
ORIGINAL_REPLICAS = PREFIX + "surge-original-replicas"  # Deployment spec.replicas before the first surge
ORIGINAL_MIN_REPLICAS = PREFIX + "surge-original-min-replicas"  # HPA spec.minReplicas before the first surge
ORIGINAL_MAX_REPLICAS = PREFIX + "surge-original-max-replicas"  # HPA spec.maxReplicas before the first surge
HOLDERS = PREFIX + "surge-holders"  # JSON: node -> {"count": replicas added for it, "run": run id}
NODE_RECORD = PREFIX + "surged"  # on the node: JSON list of the Deployments ("namespace/name") it surged
HELD_LABEL = PREFIX + "surge-held"  # label "true" on a Deployment or HPA while any surge is in place (findable)


class SurgeStatus(StrEnum):
    SURGED = "surged"  # replicas added (now or by an earlier pass for this node); waiting for the budget
    RESTORED = "restored"  # what the surge changed is back (the replacement was Ready, or the verdict came)
    UNSCHEDULABLE = "unschedulable"  # the surged replica cannot be scheduled: reported, never surged again
    ROLLOUT = "rollout-in-progress"  # a Deployment mid-rollout is not surged; looked at again soon (it ends)
    PAUSED = "paused"  # a paused Deployment is not surged until it is resumed; looked at again as held
    UNSUPPORTED = "unsupported"  # StatefulSet, bare ReplicaSet, no controller, …: cannot surge
    NOT_ENABLED = "not-enabled"  # SURGE_BLOCKED_PODS=annotated and the Deployment is not annotated
    FUTILE = "futile"  # the PDB allows no disruption at any scale (maxUnavailable 0, minAvailable 100%)
    FAILED = "failed"  # the API refused a read or a write (RBAC, outage): the drain goes on without the surge
    LIMIT = "limit-reached"  # as many extra replicas as SURGE_MAX_REPLICAS and its maxSurge allow are in place


@dataclass(frozen=True)
class Holder:
    count: int
    run: str
    expires: str | None = None  # ISO 8601 UTC: past it, the drain that surged is over (None: written before expiry)
    # the UID of the Node object the surge was made for (node_identity.py): another Node under the name later is not
    # its holder (None: written before identities were recorded, or a drain that knew none)
    uid: str | None = None

    def of(self, uid: str | None) -> bool:
        """This entry is the Node object ``uid``'s (an unknown UID on either side does not tell them apart)."""
        return self.uid is None or uid is None or self.uid == uid


MAX_HOLDER_COUNT = 100_000  # no drain adds more replicas for one node: a larger count is not ours
# a node's name, as the apiserver accepts it (a DNS-1123 subdomain): an entry naming anything else is not ours
_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_COUNT = re.compile(r"[0-9]{1,9}")


def node_name_ok(name: str) -> bool:
    return len(name) <= 253 and _NODE_NAME.fullmatch(name) is not None


def parse_holders(raw: str | None) -> dict[str, Holder]:
    """The ``surge-holders`` annotation; anything unreadable counts as no holder (never as a reason to surge more:
    the caller sees the original-value annotation and keeps it). The annotation is on a namespace's own Deployment,
    so its users can write it: an entry that is not a node's name with a count in reason is ignored."""
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for node, h in data.items():
        count = h.get("count") if isinstance(h, dict) else None
        if not (isinstance(count, int) and not isinstance(count, bool) and 0 < count <= MAX_HOLDER_COUNT):
            continue
        if isinstance(h, dict) and node_name_ok(str(node)):
            expires, uid = h.get("expires"), h.get("uid")
            out[str(node)] = Holder(
                count,
                str(h.get("run", "")),
                expires if isinstance(expires, str) else None,
                uid if isinstance(uid, str) else None,
            )
    return out


def dump_holders(holders: Mapping[str, Holder]) -> str | None:
    """The annotation value (None: remove the annotation)."""
    if not holders:
        return None
    data = {
        n: {"count": h.count, "run": h.run, **{k: v for k, v in (("expires", h.expires), ("uid", h.uid)) if v}}
        for n, h in sorted(holders.items())
    }
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) else default


def _annotation_int(annotations: Mapping[str, str], key: str) -> int | None:
    raw = annotations.get(key)
    return int(raw) if raw is not None and _COUNT.fullmatch(raw) else None  # not str.isdigit: "²" is a digit


@dataclass(frozen=True)
class DeploymentFacts:
    namespace: str
    name: str
    uid: str
    resource_version: str
    replicas: int
    generation: int
    observed_generation: int
    status_replicas: int
    updated_replicas: int
    available_replicas: int
    paused: bool
    annotations: Mapping[str, str]
    selector: Mapping[str, Any]
    progressing_reason: str | None = None
    strategy: str = "RollingUpdate"  # spec.strategy.type
    max_surge: int | str | None = None  # spec.strategy.rollingUpdate.maxSurge as written (None: the default, 25%)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def holders(self) -> dict[str, Holder]:
        return parse_holders(self.annotations.get(HOLDERS))

    @property
    def original_replicas(self) -> int | None:
        return _annotation_int(self.annotations, ORIGINAL_REPLICAS)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> DeploymentFacts:
        meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        progressing = next((c for c in status.get("conditions") or [] if c.get("type") == "Progressing"), None)
        return cls(
            namespace=meta.get("namespace", ""),
            name=meta.get("name", ""),
            uid=meta.get("uid", ""),
            resource_version=str(meta.get("resourceVersion", "")),
            replicas=_int(spec.get("replicas"), 1),
            generation=_int(meta.get("generation")),
            observed_generation=_int(status.get("observedGeneration")),
            status_replicas=_int(status.get("replicas")),
            updated_replicas=_int(status.get("updatedReplicas")),
            available_replicas=_int(status.get("availableReplicas")),
            paused=bool(spec.get("paused")),
            annotations=dict(meta.get("annotations") or {}),
            selector=dict(spec.get("selector") or {}),
            progressing_reason=progressing.get("reason") if progressing else None,
            strategy=str((spec.get("strategy") or {}).get("type") or "RollingUpdate"),
            max_surge=((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxSurge"),
        )


@dataclass(frozen=True)
class HpaFacts:
    name: str
    resource_version: str
    min_replicas: int
    max_replicas: int
    annotations: Mapping[str, str]

    @property
    def holders(self) -> dict[str, Holder]:
        return parse_holders(self.annotations.get(HOLDERS))

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> HpaFacts:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        return cls(
            name=meta.get("name", ""),
            resource_version=str(meta.get("resourceVersion", "")),
            min_replicas=_int(spec.get("minReplicas"), 1),
            max_replicas=_int(spec.get("maxReplicas"), 1),
            annotations=dict(meta.get("annotations") or {}),
        )


def hpa_targets(obj: Mapping[str, Any], deployment: str) -> bool:
    ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
    return bool(ref.get("kind") == "Deployment" and ref.get("name") == deployment)


def pdb_never_allows(pdb: Mapping[str, Any]) -> bool:
    """A budget no number of replicas can open: maxUnavailable 0 (or 0%), or minAvailable 100%."""
    spec = pdb.get("spec") or {}
    unavailable, available = spec.get("maxUnavailable"), spec.get("minAvailable")
    return unavailable in (0, "0", "0%") or available == "100%"


def surge_enabled(mode: SurgeMode, dep: DeploymentFacts) -> bool:
    """``always``: every Deployment unless it says ``drain-orchestrator.io/surge: "false"``; ``annotated``: only
    those saying ``"true"``; ``never``: none."""
    value = dep.annotations.get(SURGE_ANNOTATION, "").strip().lower()
    if mode == "always":
        return value != "false"
    return mode == "annotated" and value == "true"


def rollout_in_progress(dep: DeploymentFacts) -> str | None:
    """Why the Deployment is mid-rollout (surging it now would mix into the rollout's own arithmetic), or None."""
    if dep.observed_generation < dep.generation:
        return "the Deployment controller has not observed its latest spec yet"
    if dep.updated_replicas < dep.status_replicas:
        return f"rollout in progress ({dep.updated_replicas} of {dep.status_replicas} replicas updated)"
    if dep.progressing_reason == "ReplicaSetUpdated":
        return "rollout in progress (a new ReplicaSet is being scaled up)"
    return None


@dataclass(frozen=True)
class ScalePatch:
    """A merge patch for the Deployment (``via`` deployment) or its HPA (``via`` hpa), with the annotations that
    record it; ``before``/``after`` are the replica figure changed (spec.replicas or HPA minReplicas)."""

    via: Literal["deployment", "hpa"]
    body: dict[str, Any]
    before: int
    after: int


@dataclass(frozen=True)
class SurgeDecision:
    status: SurgeStatus
    detail: str
    patch: ScalePatch | None = None


def decide(
    mode: SurgeMode,
    dep: DeploymentFacts,
    hpa: HpaFacts | None,
    node: str,
    run_id: str,
    blocked: int,
    never_allowing: Sequence[str] = (),
    expires: str | None = None,
    uid: str | None = None,
    limit: int | None = None,
) -> SurgeDecision:
    """What to do for ``blocked`` PDB-refused pods of ``dep`` on ``node``. Idempotent: an entry of this node in
    the holders (of the HPA when there is one, else of the Deployment) means the surge is already in place.
    ``expires`` (ISO 8601 UTC) goes into the new entry: when the drain's surge may be taken back as left behind;
    ``uid``, the Node object's UID, too. An entry under the node's name made for an earlier Node of that name is left
    as it is (the sweep takes it back: its node is gone) and counts as the surge in place meanwhile.
    At most ``surge_room`` replicas are added (``limit``: SURGE_MAX_REPLICAS); the pods left over wait for the
    budget as without a surge."""
    holders = hpa.holders if hpa is not None else dep.holders
    if node in holders:
        return SurgeDecision(SurgeStatus.SURGED, f"{holders[node].count} replica(s) added for this node")
    if not surge_enabled(mode, dep):
        hint = f'annotate the Deployment {SURGE_ANNOTATION}="true" or set SURGE_BLOCKED_PODS=always'
        off = "opted out" if mode == "always" else hint
        return SurgeDecision(SurgeStatus.NOT_ENABLED, f"surge not enabled: {off}")
    if never_allowing:
        return SurgeDecision(
            SurgeStatus.FUTILE,
            f"PodDisruptionBudget {', '.join(never_allowing)} allows no disruption at any scale; surging cannot help",
        )
    if dep.paused:  # only a person resumes it: no sooner look than any held drain's
        return SurgeDecision(SurgeStatus.PAUSED, "not surged: the Deployment is paused; waiting for it to be resumed")
    why = rollout_in_progress(dep)
    if why is not None:
        return SurgeDecision(SurgeStatus.ROLLOUT, f"not surged: {why}; waiting")
    room, most, why_most = surge_room(dep, hpa, node, limit)
    if room <= 0:
        return SurgeDecision(
            SurgeStatus.LIMIT, f"not surged: {most - room} extra replica(s) in place for other nodes; {why_most}"
        )
    blocked = min(blocked, room)
    entry = {**holders, node: Holder(blocked, run_id, expires, uid)}
    labels = {HELD_LABEL: "true"}
    if hpa is not None:
        # the HPA owns spec.replicas: raising its floor makes the HPA itself add the replicas (no metrics needed,
        # the floor applies before them) instead of the two writers fighting over spec.replicas
        new_min = max(hpa.min_replicas, dep.replicas) + blocked
        new_max = max(hpa.max_replicas, new_min)
        notes: dict[str, str | None] = {HOLDERS: dump_holders(entry)}
        if not holders:
            notes[ORIGINAL_MIN_REPLICAS] = str(hpa.min_replicas)
            notes[ORIGINAL_MAX_REPLICAS] = str(hpa.max_replicas)
        body = {
            "metadata": {"resourceVersion": hpa.resource_version, "annotations": notes, "labels": labels},
            "spec": {"minReplicas": new_min, "maxReplicas": new_max},
        }
        patch = ScalePatch("hpa", body, hpa.min_replicas, new_min)
        return SurgeDecision(SurgeStatus.SURGED, f"HPA {hpa.name} minReplicas {hpa.min_replicas} -> {new_min}", patch)
    new = dep.replicas + blocked
    notes = {HOLDERS: dump_holders(entry)}
    if not holders or dep.original_replicas is None:
        notes[ORIGINAL_REPLICAS] = str(dep.replicas)
    meta = {"resourceVersion": dep.resource_version, "annotations": notes, "labels": labels}
    patch = ScalePatch("deployment", {"metadata": meta, "spec": {"replicas": new}}, dep.replicas, new)
    return SurgeDecision(SurgeStatus.SURGED, f"replicas {dep.replicas} -> {new}", patch)


def restore(dep: DeploymentFacts, hpa: HpaFacts | None, node: str, uid: str | None = None) -> ScalePatch | None:
    """The patch that takes this node's surge back (None: nothing of this node's is in place). ``uid``: the Node
    object whose surge it is; an entry under the name made for another Node object is not this node's.

    The last holder puts the recorded original back if nobody else changed the figure meanwhile; otherwise (a
    user scaled, or other nodes still hold surges) only this node's count is subtracted, so a change made by
    someone else during the drain survives."""
    if hpa is not None and node in hpa.holders and hpa.holders[node].of(uid):
        holders = hpa.holders
        mine = holders.pop(node)
        orig_min = _annotation_int(hpa.annotations, ORIGINAL_MIN_REPLICAS)
        orig_max = _annotation_int(hpa.annotations, ORIGINAL_MAX_REPLICAS)
        new_min = max(1, hpa.min_replicas - mine.count)
        new_max = hpa.max_replicas
        notes: dict[str, str | None] = {HOLDERS: dump_holders(holders)}
        meta: dict[str, Any] = {"resourceVersion": hpa.resource_version, "annotations": notes}
        if not holders:
            new_min = orig_min if orig_min is not None else new_min
            new_max = orig_max if orig_max is not None else new_max
            notes[ORIGINAL_MIN_REPLICAS] = notes[ORIGINAL_MAX_REPLICAS] = None
            meta["labels"] = {HELD_LABEL: None}
        body = {
            "metadata": meta,
            "spec": {"minReplicas": new_min, "maxReplicas": max(new_max, new_min)},
        }
        return ScalePatch("hpa", body, hpa.min_replicas, new_min)
    holders = dep.holders
    if node not in holders or not holders[node].of(uid):
        return None
    mine = holders.pop(node)
    new = max(0, dep.replicas - mine.count)
    notes = {HOLDERS: dump_holders(holders)}
    meta = {"resourceVersion": dep.resource_version, "annotations": notes}
    if not holders:
        notes[ORIGINAL_REPLICAS] = None
        meta["labels"] = {HELD_LABEL: None}
    return ScalePatch("deployment", {"metadata": meta, "spec": {"replicas": new}}, dep.replicas, new)


def replacement_ready(dep: DeploymentFacts, hpa: HpaFacts | None, left_on_node: int) -> bool:
    """This node's surged pods are gone from it (or terminating) and the Deployment has as many available replicas
    as it had before every surge: the replacements are Ready, so the extra replicas can go."""
    holders = hpa.holders if hpa is not None else dep.holders
    surged = sum(h.count for h in holders.values())
    return left_on_node == 0 and dep.available_replicas >= dep.replicas - surged


def parse_node_record(raw: str | None) -> list[str]:
    if not raw:
        return []
    try:
        data = json.loads(raw)
    except ValueError:
        return []
    return [str(x) for x in data] if isinstance(data, list) else []


@dataclass
class SurgeFacts:
    """What one drain knows about its surges, kept between passes of one process (optional; rebuilt from the
    node's record and the workloads' annotations)."""

    owners: dict[str, str | None] = field(default_factory=dict)  # "ns/replicaset" -> Deployment name (None: bare)
    in_place: set[str] = field(default_factory=set)  # "ns/deployment" surged for this node, not taken back yet
    loaded: bool = False  # the node's record has been read
    # "ns/deployment" -> (status, detail): a decision that stands for the rest of this drain
    decided: dict[str, tuple[str, str]] = field(default_factory=dict)

"""Cordon / uncordon a node with a strategic-merge PATCH (kube/node_marks.py), like ``kubectl cordon``; idempotent.

Besides ``spec.unschedulable`` it can add a NoSchedule-style taint (so DaemonSet pods, which tolerate
``unschedulable``, are not recreated), the label that makes cloud load balancers drop the node, and
annotations under ``drain-orchestrator.io/`` that record why and since when the node is draining.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from drain_orchestrator.drain_claim import Ask, Look, NodeClaim
from drain_orchestrator.kube.node_claim import ANN_DRAINER
from drain_orchestrator.kube.node_marks import ANNOTATION_PREFIX, AnnotationChange, Write, gave_up, update_node
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.node_identity import NodeIdentity

ANN_REASON = ANNOTATION_PREFIX + "reason"
ANN_EVENT_ID = ANNOTATION_PREFIX + "event-id"
ANN_STARTED_AT = ANNOTATION_PREFIX + "started-at"
ANN_DEADLINE = ANNOTATION_PREFIX + "deadline"
EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
EXCLUDE_LB_VALUE = "drain-orchestrator"


@dataclass(frozen=True)
class CordonResult:
    node: str
    changed: bool  # False: already in the desired state (kubectl: "already cordoned")
    dry_run: bool = False
    cordoned_at: float | None = None  # epoch: now, or the first cordon's started-at annotation (None: unknown)
    claimed: frozenset[str] = frozenset()  # the phase claims asked for that the owner holds (kube/node_records.py)
    # the node's annotations as read (before the write): what else the drain keeps on the node, without another GET
    annotations: Mapping[str, str] = field(default_factory=dict)
    drain_claim: Look | None = None  # the node's drain claim as this write took or joined it (when asked)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cordon(
    kube: Kube,
    node: str,
    *,
    reason: str | None = None,
    event_id: str | None = None,
    deadline: float | None = None,
    taint: tuple[str, str] | None = None,
    exclude_from_load_balancers: bool = False,
    now: float | None = None,
    dry_run: bool = False,
    claims: Mapping[str, str] | None = None,
    drain_claim: Ask | None = None,
    pin: NodeIdentity | None = None,
    marks: Callable[[dict[str, Any]], AnnotationChange] | None = None,
) -> CordonResult:
    """Make ``node`` unschedulable (+ optional taint/label/annotations). Existing annotations are kept, so
    two drains of one node agree on the first started-at and reason.

    ``claims`` (phase → owner): phase claims taken in the same write (set only if absent, under the node's
    resourceVersion, as kube/node_records.py ``claim`` does), so a drain's start costs one GET and one PATCH.
    ``drain_claim``: the node's drain claim (kube/node_claim.py) taken, joined or found settled in the same write.
    ``pin``: the Node object to cordon (node_identity.py); another under the name raises NodeReplaced untouched.
    ``marks``: more annotation changes computed from the node as read (the return mark, kube/return_marks.py), sent
    in the same write under its resourceVersion."""
    asked = {ANNOTATION_PREFIX + phase: (phase, owner) for phase, owner in (claims or {}).items()}

    def plan(body: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, str | None], set[str], Look | None]:
        """The cordon's own patch, the claims still absent (and the drain claim's change), the claims the owner
        already holds, the drain claim's look."""
        own = _cordon_patch(
            body,
            reason=reason,
            event_id=event_id,
            deadline=deadline,
            taint=taint,
            exclude_lb=exclude_from_load_balancers,
            now=now,
        )
        holders = (body.get("metadata") or {}).get("annotations") or {}
        absent: dict[str, str | None] = {k: owner for k, (_, owner) in asked.items() if k not in holders}
        held = {phase for k, (phase, owner) in asked.items() if holders.get(k) == owner}
        seen = None
        if drain_claim is not None:
            current = NodeClaim.from_json(holders.get(ANN_DRAINER))
            seen = drain_claim.look(current)
            if seen.claim != current:
                absent[ANN_DRAINER] = seen.claim.to_json()
        if marks is not None:
            absent.update(marks(body))
        return own, absent, held, seen

    def change(body: dict[str, Any]) -> dict[str, Any] | None:
        own, absent, _, _ = plan(body)
        return _with_claims(own, absent, (body.get("metadata") or {}).get("resourceVersion"))

    done = update_node(kube, node, change, dry_run=dry_run, pin=pin)
    if done.write is Write.CONTENDED:
        raise gave_up(node)
    own, absent, held, look = plan(done.node)
    seen = dict((done.node.get("metadata") or {}).get("annotations") or {})
    if done.write is Write.UNCHANGED:
        at = _started_at(done.node)
        return CordonResult(
            node,
            changed=False,
            dry_run=dry_run,
            cordoned_at=at,
            claimed=frozenset(held),
            annotations=seen,
            drain_claim=look,
        )
    before = None if not (done.node.get("spec") or {}).get("unschedulable") else _started_at(done.node)
    at = before if before is not None else now
    claimed = frozenset(held | {asked[k][0] for k in absent if k in asked})
    return CordonResult(
        node,
        changed=own is not None,
        dry_run=dry_run,
        cordoned_at=at,
        claimed=claimed,
        annotations=seen,
        drain_claim=look,
    )


def _with_claims(patch: dict[str, Any] | None, absent: dict[str, str | None], rv: str | None) -> dict[str, Any] | None:
    """The cordon's patch plus the claims still absent, under the resourceVersion (a claim is set only if absent)."""
    if not absent:
        return patch
    out = dict(patch or {})
    meta = dict(out.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **absent}
    meta["resourceVersion"] = rv
    out["metadata"] = meta
    return out


def _started_at(node: dict[str, Any]) -> float | None:
    value = ((node.get("metadata") or {}).get("annotations") or {}).get(ANN_STARTED_AT)
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp() if value else None
    except ValueError:
        return None


def uncordon(
    kube: Kube, node: str, *, taint_key: str | None = None, dry_run: bool = False, keep: tuple[str, ...] = ()
) -> CordonResult:
    """Undo :func:`cordon`: schedulable again, our taint/label/annotations removed (but those in ``keep``)."""
    done = update_node(kube, node, lambda body: uncordon_patch(body, taint_key, keep), dry_run=dry_run)
    if done.write is Write.CONTENDED:
        raise gave_up(node)
    return CordonResult(node, changed=done.write is Write.WRITTEN, dry_run=dry_run)


def _cordon_patch(
    node: dict[str, Any],
    *,
    reason: str | None,
    event_id: str | None,
    deadline: float | None,
    taint: tuple[str, str] | None,
    exclude_lb: bool,
    now: float | None,
) -> dict[str, Any] | None:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    patch: dict[str, Any] = {}
    if not spec.get("unschedulable"):
        patch.setdefault("spec", {})["unschedulable"] = True
    wanted_ann = {
        ANN_REASON: reason,
        ANN_EVENT_ID: event_id,
        ANN_DEADLINE: _iso(deadline) if deadline is not None else None,
        ANN_STARTED_AT: _iso(now) if now is not None else None,
    }
    new_ann = {k: v for k, v in wanted_ann.items() if v is not None and k not in annotations}
    if new_ann:
        patch.setdefault("metadata", {})["annotations"] = new_ann
    if exclude_lb and EXCLUDE_LB_LABEL not in labels:
        patch.setdefault("metadata", {})["labels"] = {EXCLUDE_LB_LABEL: EXCLUDE_LB_VALUE}
    if taint is not None:
        taints = list(spec.get("taints") or [])
        key, effect = taint
        if not any(t.get("key") == key and t.get("effect") == effect for t in taints):
            # spec.taints has no merge key: the patch replaces the list, so the resourceVersion below
            # makes a concurrent change to the taints fail (409) instead of being overwritten.
            taints.append({"key": key, "effect": effect, "value": "true"})
            patch.setdefault("spec", {})["taints"] = taints
    if not patch:
        return None
    if "taints" in patch.get("spec", {}):
        patch.setdefault("metadata", {})["resourceVersion"] = meta.get("resourceVersion")
    return patch


def uncordon_patch(node: dict[str, Any], taint_key: str | None, keep: tuple[str, ...] = ()) -> dict[str, Any] | None:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    patch: dict[str, Any] = {}
    if spec.get("unschedulable"):
        patch.setdefault("spec", {})["unschedulable"] = False
    ours = [k for k in (meta.get("annotations") or {}) if k.startswith(ANNOTATION_PREFIX) and k not in keep]
    if ours:
        patch.setdefault("metadata", {})["annotations"] = dict.fromkeys(ours)
    if (meta.get("labels") or {}).get(EXCLUDE_LB_LABEL) == EXCLUDE_LB_VALUE:
        patch.setdefault("metadata", {})["labels"] = {EXCLUDE_LB_LABEL: None}
    taints = list(spec.get("taints") or [])
    if taint_key is not None and any(t.get("key") == taint_key for t in taints):
        patch.setdefault("spec", {})["taints"] = [t for t in taints if t.get("key") != taint_key]
        patch.setdefault("metadata", {})["resourceVersion"] = meta.get("resourceVersion")
    return patch or None

"""The node's side of a return to service (returns.py decides): the return mark a cordon writes, what a watch reads
of the node, and the uncordon that only the mark's execution may make, under the resourceVersion it read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from drain_orchestrator.drain_claim import NodeClaim
from drain_orchestrator.kube.cordon import uncordon_patch
from drain_orchestrator.kube.errors import NodeGone
from drain_orchestrator.kube.node_claim import ANN_DRAINER
from drain_orchestrator.kube.node_marks import FIELD_MANAGER, AnnotationChange, Write, gave_up, get_node, update_node
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.returns import (
    ANN_RETURN,
    NodeState,
    Refusal,
    ReturnMark,
    cordon_mark,
    cordoned_by_another,
    may_return,
)
from drain_orchestrator.scheduled_change import ANN_CHANGES


def marks_for(mine: ReturnMark | None) -> Callable[[dict[str, Any]], AnnotationChange]:
    """The cordon's ``marks``: the return mark set, kept or removed as returns.cordon_mark says."""
    return lambda node: cordon_mark(node, mine)


def state_of(node: dict[str, Any]) -> NodeState:
    status = node.get("status") or {}
    ready: dict[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return NodeState(
        ready=ready.get("status") == "True",
        boot=str((status.get("nodeInfo") or {}).get("bootID") or ""),
        ready_since=_epoch(ready.get("lastTransitionTime")),
        mark=ReturnMark.from_json(annotations.get(ANN_RETURN)),
        others_cordon=cordoned_by_another(node, FIELD_MANAGER),
    )


def read_state(kube: Kube, node: str) -> NodeState:
    """The node as a return watch sees it (a GET); NodeGone if it is gone."""
    return state_of(get_node(kube, node))


@dataclass(frozen=True)
class Returned:
    status: str  # returned | not-ours | superseded | claimed | cordoned-by-another | dry-run
    was_cordoned: bool = False  # the node was unschedulable when returned


def return_node(
    kube: Kube, node: str, run: str | None, *, event: str | None = None, taint_key: str | None, dry_run: bool = False
) -> Returned:
    """Make the node schedulable again and remove this product's marks (the scheduled-change records stay: a late,
    older update must still find the newer one), if returns.may_return lets ``run`` (or the change ``event``) do it.
    The write is conditioned on the resourceVersion it read: a cordon by another event in between refuses it, and the
    next read decides again. NodeGone if the node is gone."""
    answers: list[Refusal | None] = []
    cordoned: list[bool] = []

    def change(body: dict[str, Any]) -> dict[str, Any] | None:
        meta = body.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        refusal = may_return(annotations, NodeClaim.from_json(annotations.get(ANN_DRAINER)), run, event)
        if refusal is None and cordoned_by_another(body, FIELD_MANAGER):
            refusal = "cordoned-by-another"
        answers.append(refusal)
        cordoned.append(bool((body.get("spec") or {}).get("unschedulable")))
        if refusal is not None:
            return None
        patch = uncordon_patch(body, taint_key, keep=(ANN_CHANGES,))
        if patch is None:
            return None
        return {**patch, "metadata": {**(patch.get("metadata") or {}), "resourceVersion": meta.get("resourceVersion")}}

    done = update_node(kube, node, change, dry_run=dry_run)
    if done.write is Write.CONTENDED:
        raise gave_up(node)
    refusal = answers[-1] if answers else "not-ours"
    if refusal is not None:
        return Returned(refusal)
    return Returned("dry-run" if dry_run else "returned", was_cordoned=cordoned[-1])


def _epoch(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


__all__ = ["NodeGone", "Returned", "marks_for", "read_state", "return_node", "state_of"]

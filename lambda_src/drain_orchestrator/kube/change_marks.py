"""The scheduled changes' records on their node (scheduled_change.py decides which update is the newest): each
execution of an update records it, on condition that the annotations are still as read, and reads back the
newest."""

from __future__ import annotations

from collections.abc import Mapping

from drain_orchestrator.kube.node_marks import AnnotationChange, Write, gave_up, update_annotations
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.scheduled_change import ANN_CHANGES, ChangeRecord, recorded


def record_change(kube: Kube, node: str, update: ChangeRecord, *, dry_run: bool = False) -> ChangeRecord:
    """Record ``update`` on the node unless a newer update of its change is there; the newest record of the change.
    NodeGone if the node is gone."""
    newest: list[ChangeRecord] = []

    def change(annotations: Mapping[str, str]) -> AnnotationChange | None:
        value, stored = recorded(annotations, update)
        newest.append(stored)
        return None if value is None else {ANN_CHANGES: value}

    done = update_annotations(kube, node, change, dry_run=dry_run)
    if done.write is Write.CONTENDED:
        raise gave_up(node)
    return newest[-1]

"""What a drain writes on its node besides the cordon: phase claims and Kubernetes Events.

A *claim* is an annotation ``drain-orchestrator.io/<phase>`` set only if absent, with a resourceVersion
precondition, so of several executions draining one node (a Spot warning, a state change and a lifecycle hook for
the same instance, or a duplicate delivery) exactly one announces each phase. The truth stays in the cluster, not
in a private store. Events make each phase visible with `kubectl describe node`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
from collections.abc import Mapping
from typing import Any

from drain_orchestrator.kube.node_marks import ANNOTATION_PREFIX, AnnotationChange, Write, update_annotations
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.node_identity import NodeIdentity

COMPONENT = "drain-orchestrator"


def claim(
    kube: Kube,
    node: str,
    phase: str,
    owner: str,
    *,
    dry_run: bool = False,
    release: str | None = None,
    pin: NodeIdentity | None = None,
) -> bool:
    """True if ``owner`` holds the ``phase`` claim on ``node`` (now or from an earlier replay of itself); on the
    ``pin``ned Node object only (another under the name: NodeReplaced).
    ``release``: a phase claim ``owner`` took ahead of its result (a drain's settle write) and gives back in the same
    write, when the result turned out otherwise (a gate held to the deadline)."""
    key = ANNOTATION_PREFIX + phase
    gone = None if release is None or release == phase else ANNOTATION_PREFIX + release

    def take(annotations: Mapping[str, str]) -> AnnotationChange | None:
        change: dict[str, str | None] = {} if key in annotations else {key: owner}
        if gone is not None and annotations.get(gone) == owner:
            change[gone] = None
        return change or None

    done = update_annotations(kube, node, take, dry_run=dry_run, pin=pin)
    if done.write is Write.CONTENDED:
        return False  # not known to be ours
    if key in done.annotations:  # already there when read: ours from a replay, or another's
        return done.annotations[key] == owner
    return True  # written now (or due, dry_run)


def node_event(
    kube: Kube, node: str, reason: str, message: str, *, event_type: str = "Normal", dry_run: bool = False
) -> None:
    """A core/v1 Event on the node (best effort: an Event must never fail a drain)."""
    if dry_run:
        return
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{node}.{secrets.token_hex(8)}", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
        "reason": reason,
        "message": message[:1024],
        "type": event_type,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    with contextlib.suppress(Exception):  # best effort by design
        kube.request("POST", "/api/v1/namespaces/default/events", body=body)

"""Answers of the apiserver kept for a moment, per client: the write right after a read (the cordon after the
lookup, the claim after the cordon, the report after the settle) needs no GET of its own. Pod listings are not
kept: a drain pass acts on what is on the node, and a listing of a moment ago may miss a pod bound since.

A node's view is the base of a write only under its resourceVersion (a view gone stale answers 409 and the writer
reads again), for up to half a minute, or, while it is a couple of seconds old, of a read as good as a GET that
returned that long ago.
Everything lives in memory per client: nothing is persisted, so an upgrade or a new container starts with none."""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from drain_orchestrator.kube.rest import Kube

FRESH_SECONDS = 2.0
# a stale base costs one refused PATCH; kubelets report a node's status only when it changes (or every few minutes,
# with leases), so a view of half a minute ago usually still is the node: the verdict's write after a drain of
# seconds needs no GET
WRITE_BASE_SECONDS = 30.0
# a write conditioned on the annotations (kube/node_marks.py update_annotations) is refused only when they changed,
# and a node's annotations change rarely during a drain (its own writes, which it remembers, and other drains'
# claims): a view of minutes ago is still a good base, and the verdict after a drain of a minute writes without a GET
ANNOTATIONS_BASE_SECONDS = 300.0


class Recent[K, V]:
    """Per client, per key: the last answer and when it came (monotonic), handed out while it is fresh."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by: weakref.WeakKeyDictionary[Kube, dict[K, tuple[float, V]]] = weakref.WeakKeyDictionary()

    def put(self, kube: Kube, key: K, value: V) -> None:
        with self._lock:
            self._by.setdefault(kube, {})[key] = (time.monotonic(), value)

    def drop(self, kube: Kube, key: K) -> None:
        with self._lock:
            (self._by.get(kube) or {}).pop(key, None)

    def get(self, kube: Kube, key: K, within: float = FRESH_SECONDS) -> V | None:
        """The answer for ``key`` if it came at most ``within`` seconds ago, else None."""
        seen = self.aged(kube, key, within)
        return None if seen is None else seen[1]

    def aged(self, kube: Kube, key: K, within: float) -> tuple[float, V] | None:
        """(its age in seconds, the answer for ``key``) if it came at most ``within`` seconds ago, else None."""
        with self._lock:
            seen = (self._by.get(kube) or {}).get(key)
        if seen is None:
            return None
        age = time.monotonic() - seen[0]
        return None if age > within else (age, seen[1])


NODES: Recent[str, dict[str, Any]] = Recent()  # node name → the Node as last read or written


def remember_node(kube: Kube, body: dict[str, Any]) -> None:
    name = (body.get("metadata") or {}).get("name")
    if name:
        NODES.put(kube, str(name), body)

"""A LIST and the watch after it in one request: a *streaming list* (``sendInitialEvents``), a watch whose first
events are the collection's objects, ended by a bookmark that carries the version they were read at; the watch then
goes on from that version. A drain lists a node's pods (and, in a storm, some budgets) and then watches them, which
took two requests; this takes one, and the apiserver sends the objects from its watch cache without building the
whole list in memory.

The apiserver's ``WatchList`` feature: on by default in Kubernetes 1.32 and from 1.34, off in 1.33 (and before 1.32),
where it answers such a watch 422. A refusal (a 4xx but 429: 422, 403 for a role that may list but not watch) is
remembered on the client for that resource, and a plain LIST is made, now and from then on; a stream answered 429 or
5xx, or cut before its bookmark, is closed and the LIST made, this once. A stream whose bookmark does not come
within a LIST's timeout fails as that LIST would (an unavailable apiserver), not followed by a LIST that would wait
as long again.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from drain_orchestrator.kube.errors import KubeError
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.watch import Watch

INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # the bookmark after the initial events carries it, "true"
# the initial events and their bookmark within a LIST's own timeout (kube/rest.py Kube.request)
LISTED_WITHIN_SECONDS = 30.0


@dataclass(frozen=True)
class Streamed:
    """A collection's objects as of ``resource_version`` (sorted as a LIST returns them: by namespace and name) and
    the watch that goes on from there (the caller closes it)."""

    items: list[dict[str, Any]]
    resource_version: str
    watch: Watch


def refused(kube: Kube, resource: str) -> bool:
    """This client's apiserver refused a streaming list of ``resource`` before: a LIST is made instead."""
    return resource in kube.streams_refused


def list_and_watch(
    kube: Kube, path: str, query: dict[str, Any], *, resource: str, watch_seconds: float
) -> Streamed | None:
    """The objects at ``path`` (``query``: its selectors) and a watch from them that the server ends after
    ``watch_seconds``; None when the apiserver does not stream lists (the caller makes a LIST)."""
    if refused(kube, resource):
        return None
    seconds = max(1, math.ceil(watch_seconds))
    streaming = {
        **query,
        "watch": "1",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",  # and no resourceVersion: as fresh as a LIST (a consistent read)
        "allowWatchBookmarks": "true",
        "timeoutSeconds": seconds,
    }
    watch = Watch(kube, path, streaming, timeout=seconds + 5)
    items: list[dict[str, Any]] = []
    end = time.monotonic() + LISTED_WITHIN_SECONDS
    while True:
        event = watch.next(end - time.monotonic())
        if event is False:  # no bookmark in time
            watch.close()
            raise KubeError(f"list {path}: no answer in {LISTED_WITHIN_SECONDS:.0f} s (a streaming list)", None)
        if event is None:  # the watch ended: refused, or cut
            watch.close()
            if watch.status is not None and _refusal(watch.status):
                kube.streams_refused.add(resource)
            return None
        assert isinstance(event, dict)
        kind, obj = event.get("type"), event.get("object") or {}
        meta = obj.get("metadata") or {}
        if kind == "ADDED":
            items.append(obj)
        elif kind == "BOOKMARK" and (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
            rv = meta.get("resourceVersion")
            if not rv:
                watch.close()
                return None
            items.sort(key=_listed_order)
            return Streamed(items, str(rv), watch)
        elif kind == "ERROR":
            watch.close()
            return None


def _refusal(status: int) -> bool:
    """An answer that will not change at the next ask (a 5xx or a 429 may: a LIST now, a stream next time)."""
    return 400 <= status < 500 and status != HTTPStatus.TOO_MANY_REQUESTS


def _listed_order(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))

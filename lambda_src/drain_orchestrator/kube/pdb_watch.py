"""PodDisruptionBudgets, raw JSON: a LIST of those of some namespaces, and a watch of them that a drain may leave
open between its waits. What a drain does with what they show (its turns at them) is the drain engine's
(engine/budget_wait.py).

The disruption controller raises ``status.disruptionsAllowed`` when a replacement pod becomes Ready; a watch on
PodDisruptionBudgets shows it at that moment. One LIST and one WATCH per wait keep the request count flat however
long the wait is.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.streamed_list import list_and_watch
from drain_orchestrator.kube.watch import Watch

Key = tuple[str, str]  # (namespace, name)
STREAM_MAX_SECONDS = 600.0  # longest a watch is kept open for waits to come (a pass is shorter)


def budgets_path(namespaces: set[str]) -> str:
    """The budgets of one namespace, or of all when several."""
    if len(namespaces) == 1:
        return f"/apis/policy/v1/namespaces/{next(iter(namespaces))}/poddisruptionbudgets"
    return "/apis/policy/v1/poddisruptionbudgets"


def allowed_of(pdb: dict[str, Any]) -> int:
    """The budget's ``status.disruptionsAllowed``."""
    return int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)


def key_of(pdb: dict[str, Any]) -> Key:
    meta = pdb.get("metadata") or {}
    return (meta.get("namespace", ""), meta.get("name", ""))


def list_path(kube: Kube, path: str) -> tuple[list[dict[str, Any]], str | None] | None:
    """Every budget at ``path`` and the LIST's resourceVersion (where a watch may start); None when the LIST fails."""
    resp = kube.request("GET", path)
    if not resp.ok:
        return None
    return list(resp.body.get("items") or []), (resp.body.get("metadata") or {}).get("resourceVersion")


@dataclass(frozen=True)
class Listed:
    """Budgets as a LIST showed them, its resourceVersion (where a wait on them may start its watch), and the watch
    from there when it came with the LIST (a streaming list)."""

    items: list[dict[str, Any]]
    resource_version: str | None
    stream: BudgetStream | None


def list_budgets(kube: Kube, namespaces: set[str], *, keep: float) -> Listed | None:
    """The budgets of ``namespaces`` (one request: of the namespace, or of all when several), and with them, where
    the apiserver streams lists, a watch from them kept open ``keep`` seconds; None when the LIST fails."""
    path = budgets_path(namespaces)
    streamed = list_and_watch_path(kube, path, keep)
    rv: str | None
    if streamed is not None:
        items, rv, stream = streamed
    else:
        listed = list_path(kube, path)
        if listed is None:
            return None
        (items, rv), stream = listed, None
    return Listed([p for p in items if (p.get("metadata") or {}).get("namespace") in namespaces], rv, stream)


def list_and_watch_path(kube: Kube, path: str, keep: float) -> tuple[list[dict[str, Any]], str, BudgetStream] | None:
    """``list_path`` and a watch from that LIST that the server keeps open ``keep`` seconds, in one request (a
    streaming list: kube/streamed_list.py); None when the apiserver does not stream lists (the caller lists)."""
    streamed = list_and_watch(kube, path, {}, resource="poddisruptionbudgets", watch_seconds=keep)
    if streamed is None:
        return None
    stream = BudgetStream(path, streamed.watch, time.monotonic() + keep)
    return streamed.items, streamed.resource_version, stream


@dataclass
class BudgetStream:
    """A watch of the budgets at ``path``, which a drain may leave open after a wait for its next wait to read on (no
    request of its own): the events of the pass in between wait in its queue. The drain closes it when it ends."""

    path: str
    watch: Watch
    until: float  # monotonic: when the server ends it (its timeoutSeconds)

    @classmethod
    def open(cls, kube: Kube, path: str, rv: str | None, keep: float) -> BudgetStream:
        """A watch from ``rv`` that the server keeps open ``keep`` seconds."""
        query = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": max(1, math.ceil(keep))}
        return cls(path, Watch(kube, path, query, timeout=keep + 5), time.monotonic() + keep)

    def usable(self, path: str) -> bool:
        return self.path == path and not self.watch.ended and time.monotonic() < self.until - 1

    def close(self) -> None:
        self.watch.close()

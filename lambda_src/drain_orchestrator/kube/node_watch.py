"""Is the node still there? A drain that waits (on budgets, on pods going) asks every ``node_check_seconds``: a Node
deleted mid-drain (its instance terminated) must end the drain within that time. Asked with a GET each time, a
drain waiting a minute reads its node a dozen times; here the first look opens a watch of that one node, and every
later look reads what the watch queued, without a request. The watch starts from the node as this client last saw
it (the cordon's write, a read: kube/recent.py), so the first look needs no GET either: a deletion since then is
the watch's first event, seen at the next look. A watch that ends (its timeout, a cut, a role without ``watch nodes``)
goes back to a GET; one answered 410 (its version no longer held: compacted, or past the watch cache's window) to a
LIST, whose version is current where the node's own is that of its last change, as old as the one refused.

The same watch says when the control plane has seen a cordon: the node lifecycle controller (kube-controller-manager,
as on EKS) taints every unschedulable node ``node.kubernetes.io/unschedulable:NoSchedule`` as soon as its informer
sees it, and the scheduler's informer reads the same apiserver watch (``NodePresence.await_taint``).

``pin`` (node_identity.py): the Node object the drain acts on. A Node of another identity under the name, read or
watched, is the located node gone (NodeReplaced, a NodeGone).
"""

from __future__ import annotations

import time
from http import HTTPStatus
from typing import Any

from drain_orchestrator.kube.errors import NodeGone
from drain_orchestrator.kube.node_marks import check_pin, get_node, list_node, read_node_fresh
from drain_orchestrator.kube.recent import NODES, WRITE_BASE_SECONDS
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.watch import Watch
from drain_orchestrator.node_identity import NodeIdentity

WATCH_SECONDS = 300  # the server ends the watch after this long (a drain pass is shorter); a GET then opens another
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "NoSchedule")  # the node lifecycle controller's, at a cordon
GET_EVERY_SECONDS = 0.25  # a role that may not watch nodes looks for a taint with a GET this often


class NodePresence:
    def __init__(self, kube: Kube, node: str, pin: NodeIdentity | None = None) -> None:
        self.kube, self.node, self.pin = kube, node, pin
        self.watchable = True  # False once the watch was refused (403: an older role): GETs only
        self._watch: Watch | None = None
        self.last: dict[str, Any] | None = None  # the node as the last GET or watch event showed it
        # the last watch ended 410: the next one starts from a LIST's version, not the node's own (see check)
        self._relist = False

    @property
    def watching(self) -> bool:
        """A look now costs no request."""
        return self._watch is not None

    def check(self, *, waiting: bool) -> None:
        """Raise NodeGone when the node is gone. ``waiting``: more looks follow soon, worth a watch (a look with a
        view of the node to start from opens one anyway: it costs the GET it saves)."""
        if self._watch is not None:
            seen = self._read_on()
            if seen is True:
                return
            self.close()  # ended: look with a GET, and watch again from there
        elif self.watchable and not self._relist and (rv := self._view_version()):
            self._open(rv)
            return
        if self._relist:
            # a node unchanged since the version that was gone has that version still, in a GET and in the view
            # alike: a watch from it would be answered 410 again at every look (or at once, in a loop, waiting on a
            # taint). A LIST's version is the collection's, current: one LIST per 410
            self._relist = False
            self.last, rv = list_node(self.kube, self.node, self.pin)  # NodeGone when gone (or replaced)
        else:
            node = self.last = read_node_fresh(self.kube, self.node, self.pin)  # NodeGone when gone (or replaced)
            rv = _version(node)
        if waiting and self.watchable and rv:
            self._open(rv)

    def tainted(self, taint: tuple[str, str]) -> bool:
        """The node carries ``taint`` (key, effect) as this client last saw it (no request)."""
        return any(_has(n, taint) for n in (self.last, self._view()))

    def await_taint(self, taint: tuple[str, str], timeout: float) -> bool:
        """Until the node carries ``taint`` (True) or ``timeout`` seconds pass (False), reading the node's watch
        (opened from the last view of the node: a taint written since is its first event); with no time left, one
        GET. NodeGone if it goes."""
        end = time.monotonic() + timeout
        if timeout <= 0 and not self.tainted(taint):
            self.last = get_node(self.kube, self.node, self.pin)  # no time to wait: one look at the node as it is now
        while not self.tainted(taint):
            left = end - time.monotonic()
            if left <= 0:
                return False
            if self._watch is not None:
                event = self._watch.next(left)
                if isinstance(event, dict):
                    if self._take(event):
                        continue
                elif event is not None:  # the time ran out: the loop ends
                    continue
                if event is None and self._watch.status not in (None, HTTPStatus.OK):
                    self.watchable = False  # refused (403, 429): GETs from now on
                self.close()  # ended (a cut, 410): read the node (a LIST after a 410), and watch again from there
            elif self.watchable:
                self.check(waiting=True)  # opens the watch, after a GET when no view of the node is at hand
                if self._watch is not None:
                    continue
            time.sleep(min(max(0.0, end - time.monotonic()), GET_EVERY_SECONDS) if not self.watchable else 0.0)
            self.last = get_node(self.kube, self.node, self.pin)  # NodeGone when it is gone
        return True

    def _take(self, event: dict[str, Any]) -> bool:
        """One watch event: the node's new state kept; False when the watch is over (410). NodeGone: deleted."""
        kind = event.get("type")
        if kind == "DELETED":
            self.close()
            raise NodeGone(self.node)
        if kind == "ERROR":  # its version is gone (410)
            return False
        obj = event.get("object")
        if isinstance(obj, dict):
            try:
                check_pin(self.node, obj, self.pin)  # a Node registered again under the name: not ours
            except NodeGone:
                self.close()
                raise
            self.last = obj
        return True

    def _view(self) -> dict[str, Any] | None:
        """This client's recent view of the pinned node (None: none, or another Node under the name)."""
        seen = NODES.get(self.kube, self.node, WRITE_BASE_SECONDS)
        return seen if seen is not None and (self.pin is None or self.pin.matches(seen)) else None

    def _view_version(self) -> str | None:
        """The resourceVersion of this client's recent view of the pinned node, to watch from (None: no view)."""
        return _version(self._view())

    def _open(self, rv: str) -> None:
        query = {
            "watch": "1",
            "fieldSelector": f"metadata.name={self.node}",
            "resourceVersion": rv,
            "allowWatchBookmarks": "false",
            "timeoutSeconds": WATCH_SECONDS,
        }
        self._watch = Watch(self.kube, "/api/v1/nodes", query, timeout=WATCH_SECONDS + 5)

    def _read_on(self) -> bool:
        """True: the watch runs and saw the node stay; False: it ended. NodeGone: it saw the node deleted."""
        assert self._watch is not None
        while True:
            event = self._watch.next(0.0)
            if event is False:
                return not self._watch.ended
            if event is None:
                if self._watch.status not in (None, HTTPStatus.OK):
                    # refused (403: an older role; 429: a loaded apiserver): GETs for the rest of the drain, not a
                    # GET and a refused watch at every look
                    self.watchable = False
                return False
            assert isinstance(event, dict)
            if not self._take(event):
                return False

    def close(self) -> None:
        if self._watch is not None:
            self._relist = self._relist or self._watch.gone
            self._watch.close()
            self._watch = None


def _has(node: dict[str, Any] | None, taint: tuple[str, str]) -> bool:
    taints = ((node or {}).get("spec") or {}).get("taints") or []
    return any((t.get("key"), t.get("effect")) == taint for t in taints if isinstance(t, dict))


def _version(node: dict[str, Any] | None) -> str | None:
    rv = ((node or {}).get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv else None

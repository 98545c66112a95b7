"""Pods bound to a node after its cordon, on the real control plane, at set times after it.

The scheduler places nothing on a cordoned node unless the pod tolerates ``node.kubernetes.io/unschedulable``
(DaemonSet pods do; any pod may), or unless it placed the pod before its cache saw the cordon (a race of
milliseconds: not something a test can time). So ``LateBindings`` creates, at each offset after the cordon, either a
pod the scheduler places (it tolerates the unschedulable taint and asks for the node by affinity, with no nodeName:
the scheduler binds it) or a pod that names the node itself (``spec.nodeName``: no scheduler; a kubelet takes it on
a cordoned node too). It watches from a thread of its own: when the node was cordoned, when each pod was created and
when it left the node (epoch seconds, to compare with the apiserver's and the emulator's times).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from testbed.kube import KubeScenario

TOLERATE_CORDON = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
KWOK_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
LOOK_EVERY = 0.02  # how often the watcher reads the node and the pods


class LateBindings:
    def __init__(
        self, k8s: KubeScenario, node: str, *, scheduled: dict[str, float], named: dict[str, float] | None = None
    ) -> None:
        self.k8s, self.node = k8s, node
        self.plan = {
            **{n: (at, True) for n, at in scheduled.items()},
            **{n: (at, False) for n, at in (named or {}).items()},
        }
        self.cordoned_at: float | None = None
        self.created_at: dict[str, float] = {}
        self.bound_at: dict[str, float] = {}
        self.gone_at: dict[str, float] = {}
        # the start of the last look that still found the pod: it existed at some moment after this time, so a
        # pod whose ``present_at`` is after an action's time was still there after it (``gone_at`` is a look later
        # and may come after the action even when the pod went before it)
        self.present_at: dict[str, float] = {}
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._timers: list[threading.Timer] = []

    def _create(self, name: str, by_scheduler: bool) -> None:
        try:
            extra = {"tolerations": [KWOK_TOLERATION, TOLERATE_CORDON]}
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": self.k8s.ns, "labels": {"late": "yes"}},
                "spec": self.k8s.pod_spec(nodes=[self.node], extra=extra)
                if by_scheduler
                else self.k8s.pod_spec(node=self.node),
            }
            self.k8s.core.create_namespaced_pod(self.k8s.ns, body)
            self.created_at[name] = time.time()
        except BaseException as exc:  # re-raised by the test (``check``)
            self.errors.append(exc)

    def _watch(self) -> None:
        try:
            while not self._stop.is_set():
                now = time.time()
                if self.cordoned_at is None and self.k8s.core.read_node(self.node).spec.unschedulable:
                    self.cordoned_at = now
                    for name, (at, by_scheduler) in self.plan.items():
                        timer = threading.Timer(at - (time.time() - now), self._create, (name, by_scheduler))
                        timer.daemon = True
                        self._timers.append(timer)
                        timer.start()
                if self.created_at:
                    pods = self.k8s.core.list_namespaced_pod(self.k8s.ns, label_selector="late=yes").items
                    for p in pods:
                        self.present_at[p.metadata.name] = now
                        if p.spec.node_name == self.node:
                            self.bound_at.setdefault(p.metadata.name, now)
                    present = {p.metadata.name for p in pods}
                    for name in list(self.created_at):
                        if name not in present:
                            self.gone_at.setdefault(name, now)
                self._stop.wait(LOOK_EVERY)
        except BaseException as exc:
            self.errors.append(exc)

    def check(self) -> None:
        if self.errors:
            raise self.errors[0]

    def after_cordon(self, name: str, times: dict[str, float]) -> float:
        """When ``name`` was created / bound / gone (``times``), in seconds after the cordon."""
        assert self.cordoned_at is not None, "the node was never seen cordoned"
        return times[name] - self.cordoned_at

    def gone_by(self, name: str, at: float) -> bool:
        """Whether no look that started after ``at`` (epoch seconds) found ``name``: it was gone by then, as far as
        the watcher's looks can tell."""
        return name in self.gone_at and self.present_at.get(name, 0.0) <= at

    def placed_by_scheduler(self, name: str) -> bool:
        """The scheduler's own record (its Scheduled Event) that it bound ``name`` to the node."""
        return self._scheduled_event(name) is not None

    def bound_after_cordon(self, name: str) -> float:
        """When ``name`` was bound, in seconds after the cordon: as the watcher saw it, or, when the pod was bound
        and gone between two of its looks (a loaded machine), as the scheduler's Scheduled Event records it."""
        if name in self.bound_at:
            return self.after_cordon(name, self.bound_at)
        event = self._scheduled_event(name)
        assert event is not None, f"{name} was never seen on the node and the scheduler recorded no binding"
        recorded = event.event_time or event.first_timestamp
        assert recorded is not None, f"{name}'s Scheduled Event has no time"
        assert self.cordoned_at is not None, "the node was never seen cordoned"
        return recorded.timestamp() - self.cordoned_at

    def _scheduled_event(self, name: str) -> Any:
        events = self.k8s.core.list_namespaced_event(self.k8s.ns, field_selector=f"involvedObject.name={name}").items
        return next((e for e in events if e.reason == "Scheduled" and self.node in (e.message or "")), None)

    def wait_gone(self, timeout: float = 30) -> None:
        """Until every pod created has left the node (the test's verdict is read after they did)."""
        self.k8s.wait_for(lambda: set(self.gone_at) >= set(self.plan), timeout=timeout, what="the late pods gone")


@contextmanager
def late_bindings(
    k8s: KubeScenario, node: str, *, scheduled: dict[str, float], named: dict[str, float] | None = None
) -> Iterator[LateBindings]:
    """``LateBindings`` running from the first look at the node until the block ends (then its errors raise)."""
    late = LateBindings(k8s, node, scheduled=scheduled, named=named)
    watcher = threading.Thread(target=late._watch, daemon=True, name="late-bindings")
    watcher.start()
    try:
        yield late
    finally:
        late._stop.set()
        watcher.join(timeout=10)
        for timer in late._timers:
            timer.cancel()
    late.check()

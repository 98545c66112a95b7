"""Helpers for the drain integration tests: the product's identity (impersonated, shipped RBAC), node
cordoning for fixtures, and small pod/workload builders on top of testbed.kube.KubeScenario."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from kubernetes.client.exceptions import NotFoundException

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.engine.drainer import drain_node
from drain_orchestrator.kube.rest import Kube

DRAIN_USER = "drain-test"
DRAIN_GROUP = "drain-orchestrator"  # bound to the ClusterRole of infra/k8s/rbac.yaml


def drainer_client(testbed: Any) -> Any:
    """An ApiClient acting as the product: only what infra/k8s/rbac.yaml grants the group allows."""
    api = testbed.admin_api_client()
    api.set_default_header("Impersonate-User", DRAIN_USER)
    api.set_default_header("Impersonate-Group", DRAIN_GROUP)
    return api


def drainer(testbed: Any, concurrency: int = 32) -> AbstractContextManager[Kube]:
    return _client_as_product(testbed, Kube, concurrency)


@contextmanager
def _client_as_product[K: Kube](testbed: Any, kind: type[K], concurrency: int) -> Iterator[K]:
    api = drainer_client(testbed)
    try:
        yield kind(api, pool_size=concurrency)
    finally:
        api.close()


def set_unschedulable(k8s: Any, node: str, value: bool) -> None:
    k8s.core.patch_node(node, {"spec": {"unschedulable": value}})


def pods_on(k8s: Any, node: str, selector: str = "") -> list[Any]:
    return [p for p in k8s.pods(selector, node=node)]


def ready_pods_on(k8s: Any, nodes: list[str], selector: str) -> list[Any]:
    return [p for p in k8s.pods(selector) if p.spec.node_name in nodes and k8s.pod_ready(p)]


def hold(k8s: Any, name: str) -> None:
    """A finalizer keeps the pod in Terminating until :func:`release`."""
    k8s.core.patch_namespaced_pod(name, k8s.ns, {"metadata": {"finalizers": ["drain-test/hold"]}})


def release(k8s: Any, name: str) -> None:
    with contextlib.suppress(NotFoundException):  # already gone is released
        k8s.core.patch_namespaced_pod(name, k8s.ns, {"metadata": {"finalizers": None}})


class Lines:
    """Collects the drain's progress lines (thread-safe)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

    def matching(self, text: str) -> list[str]:
        with self._lock:
            return [x for x in self.lines if text in x]


def drain(kube: Kube, node: str, timeout: float = 60, progress: Lines | None = None, **opts: Any) -> DrainReport:
    return drain_node(kube, node, DrainOptions(**opts), timeout=timeout, progress=progress)


def pods_with_workloads_on(k8s: Any, target: str, spare: str, build: Any) -> None:
    """Create workloads while only ``target`` is schedulable, so every replica lands there; then open
    ``spare`` for the replacements the drain will cause."""
    set_unschedulable(k8s, spare, True)
    build()
    set_unschedulable(k8s, spare, False)


@contextmanager
def role_bound_to_group(testbed: Any, group: str, rules: list[dict[str, Any]]) -> Iterator[None]:
    """A ClusterRole with ``rules`` bound to ``group`` (both named after it), removed afterwards: an older role."""
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(testbed.admin_api_client())
    rbac.create_cluster_role({"metadata": {"name": group}, "rules": rules})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": group},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": group},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        }
    )
    try:
        yield
    finally:
        rbac.delete_cluster_role_binding(group)
        rbac.delete_cluster_role(group)


def shipped_rules_without(resource: str, verb: str) -> list[dict[str, Any]]:
    """The shipped ClusterRole's rules as they were before ``verb`` on ``resource`` (an older role)."""
    import yaml

    from testbed.control_plane import RBAC_FILE

    shipped = next(d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if d and d["kind"] == "ClusterRole")
    rules = [
        {**r, "verbs": [v for v in r["verbs"] if v != verb]} if r["resources"] == [resource] else r
        for r in shipped["rules"]
    ]
    assert rules != shipped["rules"], f"the shipped role no longer grants {resource} {verb}"
    return rules


@contextmanager
def impersonating(testbed: Any, group: str, user: str = DRAIN_USER) -> Iterator[Kube]:
    """A client acting as ``user`` (the product's) in ``group`` (a role of its own, e.g. an older one)."""
    api = testbed.admin_api_client()
    api.set_default_header("Impersonate-User", user)
    api.set_default_header("Impersonate-Group", group)
    try:
        yield Kube(api)
    finally:
        api.close()


class Sending(Kube):
    """The product's client, noting each request it sends as (verb, path, query): "list"/"watch" for GETs of a
    collection, a watch streaming its list (sendInitialEvents) as "watch+list" (the apiserver answers every one)."""

    def __init__(self, api_client: Any, pool_size: int | None = None) -> None:
        super().__init__(api_client, pool_size)
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def request(self, method: str, path: str, **kw: Any) -> Any:
        self.sent.append((method, path, dict(kw.get("query") or {})))
        return super().request(method, path, **kw)

    def stream_lines(self, path: str, query: Any, *args: Any, **kw: Any) -> Any:
        self.sent.append(("WATCH+LIST" if query.get("sendInitialEvents") else "WATCH", path, dict(query)))
        return super().stream_lines(path, query, *args, **kw)

    def to(self, path: str) -> list[str]:
        """The methods sent to ``path`` (GET, WATCH, WATCH+LIST, ...), in order."""
        return [m for m, p, _ in self.sent if p == path]


def sending(testbed: Any, concurrency: int = 32) -> AbstractContextManager[Sending]:
    """The product's client (as ``drainer``), noting what it sends."""
    return _client_as_product(testbed, Sending, concurrency)


def pod_lists_of(kube: Any) -> list[float]:
    """When ``kube`` listed pods (monotonic): the real client, its LISTs of pods noted on the way through, a LIST
    streamed with its watch (sendInitialEvents) as one."""
    at: list[float] = []
    real, real_stream = kube.request, kube.stream_lines

    def request(method: str, path: str, **kw: Any) -> Any:
        if method == "GET" and path == "/api/v1/pods" and not (kw.get("query") or {}).get("watch"):
            at.append(time.monotonic())
        return real(method, path, **kw)

    def stream_lines(path: str, query: Any, *args: Any, **kw: Any) -> Any:
        if path == "/api/v1/pods" and query.get("sendInitialEvents"):
            at.append(time.monotonic())
        return real_stream(path, query, *args, **kw)

    kube.request, kube.stream_lines = request, stream_lines
    return at


def budget_allowing_one(k8s: Any) -> tuple[str, str]:
    """A Deployment of 2 under minAvailable 1, its budget allowing one disruption: its (namespace, name)."""
    k8s.add_nodes(1)
    k8s.deployment("web", 2)
    k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, min_available=1)
    k8s.wait_pdb("web", disruptions_allowed=1)
    return (k8s.ns, "web")

"""A drain that waits looks at its node without a GET: the first look opens a watch of the node from the cordon's
view of it, later looks read it; a node deleted meanwhile still ends the drain within a node check, and a role that
may not watch nodes (not upgraded yet) still drains with GETs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from drain_orchestrator.kube.errors import NodeGone
from drain_orchestrator.kube.rest import Kube
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.drain_support import (
    drain,
    drainer,
    impersonating,
    role_bound_to_group,
    shipped_rules_without,
)

pytestmark = pytest.mark.integration
OLD_GROUP = "drain-orchestrator-without-node-watch"


def node_reads_of(kube: Kube, node: str) -> dict[str, int]:
    """GETs and watches of ``node`` through ``kube`` (the real client, its requests noted on the way through)."""
    seen = {"get": 0, "watch": 0}
    request, stream = kube.request, kube.stream_lines

    def counted_request(method: str, path: str, **kw: Any) -> Any:
        if method == "GET" and path == f"/api/v1/nodes/{node}":
            seen["get"] += 1
        return request(method, path, **kw)

    def counted_stream(path: str, query: Any, timeout: float, opened: Any = None) -> Any:
        if path == "/api/v1/nodes":
            seen["watch"] += 1
        return stream(path, query, timeout, opened)

    kube.request, kube.stream_lines = counted_request, counted_stream  # type: ignore[method-assign]
    return seen


def shut_budget(k8s: KubeScenario) -> str:
    (node,) = k8s.add_nodes(1)
    k8s.deployment("web", 2)
    k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, max_unavailable=0)
    k8s.wait_pdb("web", disruptions_allowed=0)
    return node


def test_a_drain_waiting_on_a_budget_watches_its_node_instead_of_reading_it_at_every_check(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    node = shut_budget(k8s)
    with drainer(testbed) as kube:
        seen = node_reads_of(kube, node)
        report = drain(kube, node, timeout=60, deadline=time.time() + 22)
    assert not report.drained and "deadline reached" in report.warnings
    # 20 s of waiting with a node check every 5 s: four GETs if each check read the node; the one GET is the
    # cordon's, the first check opens a watch from its answer, and the later checks read the watch
    assert seen["watch"] >= 1 and seen["get"] == 1, seen


def test_a_node_deleted_while_its_drain_waits_on_a_budget_ends_the_drain_within_a_node_check(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    node = shut_budget(k8s)
    deleted: dict[str, float] = {}

    def delete_later() -> None:
        time.sleep(8)  # the drain is waiting on the budget, its node watched
        k8s.core.delete_node(node)
        deleted["at"] = time.monotonic()

    threading.Thread(target=delete_later, daemon=True).start()
    with drainer(testbed) as kube, pytest.raises(NodeGone):
        drain(kube, node, timeout=60)
    assert "at" in deleted and time.monotonic() - deleted["at"] < 5 + 2  # within a node check of the deletion


@pytest.fixture
def role_without_watch_nodes(testbed: Testbed) -> Iterator[None]:
    """The shipped ClusterRole as it was before `nodes watch`, bound to a group of its own."""
    with role_bound_to_group(testbed, OLD_GROUP, shipped_rules_without("nodes", "watch")):
        yield


def test_a_role_that_may_not_watch_nodes_reads_the_node_with_gets(
    testbed: Testbed, k8s: KubeScenario, role_without_watch_nodes: None
) -> None:
    node = shut_budget(k8s)
    with impersonating(testbed, OLD_GROUP) as kube:
        k8s.wait_for(lambda: kube.request("GET", f"/api/v1/nodes/{node}").ok, what="the binding")
        seen = node_reads_of(kube, node)
        report = drain(kube, node, timeout=60, deadline=time.time() + 17)
    assert not report.drained and "deadline reached" in report.warnings
    assert seen["get"] >= 2, seen  # the refused watch is not retried at every check, and the checks go on as GETs
    assert seen["watch"] <= 2, seen

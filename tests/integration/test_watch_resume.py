"""Watches resumed from a resourceVersion the apiserver no longer holds, on the real bed: a restarted apiserver's
watch cache begins after it, so the watch answers 410 Gone. The budget wait lists again within the same wait and
still sees the budget allowing; the pod wait hands back to the next pass's list instead of giving up watching; the
node's watch lists the node once and watches on from that LIST's version (a GET would give the node's own version,
the one refused, while the node is unchanged), not once a look. A
role that may not watch pods (from before `pods watch` was granted) is told apart from a cut watch: that drain
polls."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from drain_orchestrator.engine.budget_wait import Budgets, wait_for_budget
from drain_orchestrator.engine.waits import PodsWatched, wait_for_deletions
from drain_orchestrator.kube.node_watch import NodePresence
from drain_orchestrator.kube.pods import list_node_pods_at
from drain_orchestrator.kube.recent import remember_node
from drain_orchestrator.kube.rest import Kube
from testbed.bed import Testbed
from testbed.faults import BedFaults
from testbed.kube import KubeScenario
from tests.integration.drain_support import drainer, impersonating, role_bound_to_group, shipped_rules_without

pytestmark = pytest.mark.integration


def _gone(kube: Kube, path: str, query: dict[str, Any]) -> dict[str, Any]:
    """The first event of a watch from ``query``'s version, once the restarted apiserver's cache is ready."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for event in kube.stream_lines(path, {**query, "watch": "1", "timeoutSeconds": 2}, 10):
            return event
        time.sleep(0.2)  # 429 while the watch cache initializes: nothing streamed yet
    raise AssertionError(f"no event from a watch of {path} at {query} within 60 s")


def test_watches_from_a_version_a_restarted_apiserver_no_longer_holds_list_again(
    testbed: Testbed, k8s: KubeScenario, bed_faults: BedFaults
) -> None:
    node, spare = k8s.add_nodes(2)
    k8s.deployment("web", 2)
    pods = k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, min_available=1)
    key = (k8s.ns, "web")
    path = f"/apis/policy/v1/namespaces/{k8s.ns}/poddisruptionbudgets"
    deadline = time.monotonic() + 60
    while k8s.policy.read_namespaced_pod_disruption_budget("web", k8s.ns).status.disruptions_allowed != 1:
        assert time.monotonic() < deadline, "the disruption controller never allowed one disruption"
        time.sleep(0.2)
    on_node = [p for p in pods if p.spec.node_name in (node, spare)]
    target = on_node[0].spec.node_name
    with drainer(testbed) as kube:
        budgets_rv = kube.request("GET", path).body["metadata"]["resourceVersion"]
        listed = list_node_pods_at(kube, target)
        seen_node = kube.request("GET", f"/api/v1/nodes/{target}").body  # as a drain's cordon left it
    assert listed.resource_version and listed.items
    k8s.core.create_namespaced_config_map(k8s.ns, {"metadata": {"name": "after-the-lists"}})  # etcd moves on
    bed_faults.stop("kube-apiserver")
    bed_faults.restart("kube-apiserver")

    with drainer(testbed) as kube:
        # the premise: both versions are gone from the restarted apiserver's point of view
        gone = _gone(kube, path, {"resourceVersion": budgets_rv})
        assert gone["type"] == "ERROR" and gone["object"]["code"] == 410, gone
        pods_query = {"resourceVersion": listed.resource_version, "fieldSelector": f"spec.nodeName={target}"}
        gone = _gone(kube, "/api/v1/pods", pods_query)
        assert gone["type"] == "ERROR" and gone["object"]["code"] == 410, gone

        t0 = time.monotonic()
        stale = Budgets({}, t0, seen={key: 0}, rv=budgets_rv)  # as a wait ended before the restart
        got = wait_for_budget(kube, [key], 20, resume=stale)
        took = time.monotonic() - t0
        assert got.allowed == {key: 1}, got
        assert took < 10, f"the budget was allowing all along, yet the wait took {took:.1f} s"
        assert got.rv is not None and int(got.rv) > int(budgets_rv)

        t0 = time.monotonic()
        uids = {str(p["metadata"]["uid"]) for p in listed.items}
        ended = wait_for_deletions(kube, target, listed.resource_version, uids, 20)
        took = time.monotonic() - t0
        # ENDED: the next pass lists again and watches from there; FORBIDDEN would stop watching pods for the drain
        assert ended is PodsWatched.ENDED, ended
        assert took < 10, f"a gone version should end the wait at once, not after {took:.1f} s"

    with drainer(testbed) as kube:
        node_query = {
            "resourceVersion": seen_node["metadata"]["resourceVersion"],
            "fieldSelector": f"metadata.name={target}",
        }
        gone = _gone(kube, "/api/v1/nodes", node_query)  # the premise: the node's version is gone too
        assert gone["type"] == "ERROR" and gone["object"]["code"] == 410, gone
        gone0 = kube.versions_gone
        remember_node(kube, seen_node)  # the drain's view of its node, from before the restart
        presence = NodePresence(kube, target)
        # looks of a waiting drain: the first watches from the view, a later one finds that watch ended 410; the view
        # (and, while the node is unchanged, a GET) still has the version that was gone
        for _ in range(12):
            calls0 = kube.calls
            presence.check(waiting=True)
            time.sleep(0.25)
        assert kube.versions_gone - gone0 == 1, "the node's watch was opened again from the version that was gone"
        assert presence.watching and kube.calls == calls0, "the last look sent a request: its watch is not running"


def _web_budget(k8s: KubeScenario, max_unavailable: int) -> tuple[str, str]:
    """Two pods on one node under a budget allowing ``max_unavailable`` of them, as its status says; its key."""
    k8s.add_nodes(1)
    k8s.deployment("web", 2)
    k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, max_unavailable=max_unavailable)
    k8s.wait_pdb("web", disruptions_allowed=max_unavailable)
    return (k8s.ns, "web")


OLD_GROUP = "drain-orchestrator-without-watch-pods"


@pytest.fixture
def role_without_watch_pods(testbed: Testbed) -> Iterator[None]:
    """The shipped ClusterRole as it was before `pods watch`, bound to a group of its own."""
    with role_bound_to_group(testbed, OLD_GROUP, shipped_rules_without("pods", "watch")):
        yield


def test_a_role_that_may_not_watch_pods_is_told_apart_from_a_cut_watch(
    testbed: Testbed, k8s: KubeScenario, role_without_watch_pods: None
) -> None:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("web", 1, [node], spare)
    with impersonating(testbed, OLD_GROUP) as kube:
        # the authorizer learns of a new binding from its informer: wait until the group may list the node's pods
        k8s.wait_for(lambda: kube.request("GET", "/api/v1/pods", query={"limit": 1}).ok, what="the binding")
        listed = list_node_pods_at(kube, node)
        assert listed.resource_version and listed.items
        t0 = time.monotonic()
        uids = {str(p["metadata"]["uid"]) for p in listed.items}
        ended = wait_for_deletions(kube, node, listed.resource_version, uids, 20)
        took = time.monotonic() - t0
    assert ended is PodsWatched.FORBIDDEN, ended  # the drain polls from here on (a cut watch would be ENDED)
    assert took < 5, took


def test_waits_on_a_budget_read_on_from_the_watch_the_last_one_left_open(testbed: Testbed, k8s: KubeScenario) -> None:
    """A wait hands its watch back open: the next wait of the drain sends no request, and a rise that came in
    between (while the pass ran) is in the watch's queue, not lost."""
    key = _web_budget(k8s, max_unavailable=0)
    with drainer(testbed) as kube:
        first = wait_for_budget(kube, [key], 1.0, keep_open=60)
        try:
            assert first.allowed == {} and first.stream is not None  # shut: timed out, the watch left open
            k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})
            k8s.wait_pdb("web", disruptions_allowed=1)  # risen while no wait was running
            calls0 = kube.calls
            second = wait_for_budget(kube, [key], 20, resume=first, keep_open=60)
            assert second.allowed == {key: 1}, second
            assert kube.calls == calls0, "the second wait sent a request of its own"
            assert second.stream is first.stream
        finally:
            first.close()
        closed_by = time.monotonic() + 5
        event = first.stream.watch.next(5)
        while isinstance(event, dict):  # what was queued before the close, then the end
            event = first.stream.watch.next(closed_by - time.monotonic())
        assert event is None, "the closed watch's reader did not end"


def test_a_wait_whose_watch_ends_does_not_wait_blind_for_a_turn_drawn_on_it(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    """A turn is drawn for what the budget allowed and moved as the watch shows it allow more or less: when the watch
    ends before the turn comes (its time ran out, or a restart cut it), the wait hands back within a moment (the next
    one lists again and draws anew), not after sleeping out a turn nothing moves any more."""
    key = _web_budget(k8s, max_unavailable=1)
    with drainer(testbed) as kube:
        first = wait_for_budget(kube, [key], 0.3, hold_off=lambda k, allowed: 60.0, keep_open=3)
        try:
            assert first.allowed == {} and first.seen == {key: 1} and first.stream is not None  # turn: in a minute
            t0 = time.monotonic()
            second = wait_for_budget(kube, [key], 30, hold_off=lambda k, allowed: 60.0, resume=first, keep_open=3)
            took = time.monotonic() - t0
        finally:
            first.close()
    assert second.allowed == {} and second.rv is None, second  # no turn; the next wait lists again
    assert took < 8, f"the wait outlived its watch by {took:.1f} s, waiting for a turn nothing moved any more"

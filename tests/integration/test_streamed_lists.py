"""A LIST and its watch in one request, on the bed's real apiserver (WatchList on, as from Kubernetes 1.34): a
drain's reads of its node's pods are streaming lists, each the pass's LIST and the watch the waits read on from, and
a wait on budgets lists and watches them with one request. A stream the apiserver does not answer fails as a LIST
would, without a LIST after it."""

from __future__ import annotations

import time

import pytest

from drain_orchestrator.engine.budget_wait import wait_for_budget
from drain_orchestrator.kube import streamed_list
from drain_orchestrator.kube.errors import KubeError
from drain_orchestrator.kube.pods import list_and_watch_node_pods, list_node_pods_at
from testbed.bed import Testbed
from testbed.faults import BedFaults
from testbed.kube import KubeScenario
from tests.integration.drain_support import budget_allowing_one, drain, sending

pytestmark = pytest.mark.integration

PODS = "/api/v1/pods"


def test_a_streamed_list_of_a_node_s_pods_is_the_list_and_then_watches_a_pod_bound_after_it(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("web", 3, [node], spare)
    with sending(testbed) as kube:
        listed = list_node_pods_at(kube, node)
        streamed = list_and_watch_node_pods(kube, node)
        assert streamed is not None, f"the bed's apiserver refused a streaming list: {kube.streams_refused}"
        assert kube.to(PODS) == ["GET", "WATCH+LIST"]
        pods, watch = streamed
        try:
            names = [p["metadata"]["name"] for p in pods.items]
            assert names == [p["metadata"]["name"] for p in listed.items]  # what a LIST shows, in its order
            assert pods.resource_version and int(pods.resource_version) >= int(listed.resource_version or 0)
            k8s.bare_pod("late", node=node)  # bound after the LIST: the watch from it shows it
            deadline = time.monotonic() + 30
            added: list[str] = []
            while "late" not in added:
                assert time.monotonic() < deadline, f"the watch showed no pod bound after its LIST: {added}"
                event = watch.next(deadline - time.monotonic())
                if isinstance(event, dict) and event.get("type") == "ADDED":
                    added.append(event["object"]["metadata"]["name"])
            assert added == ["late"], added  # the LIST's pods are not sent again
        finally:
            watch.close()


def test_a_drain_s_reads_of_its_node_s_pods_are_lists_that_bring_their_watch(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("web", 4, [node], spare, grace=1)
    with sending(testbed) as kube:
        report = drain(kube, node, timeout=60)
    assert report.drained, report
    assert k8s.pods(node=node) == []
    reads = kube.to(PODS)
    # every LIST of the node's pods came with its watch, and the waits read on from those: no other request
    assert reads and set(reads) == {"WATCH+LIST"}, reads


def test_a_wait_on_a_budget_lists_and_watches_it_with_one_request(testbed: Testbed, k8s: KubeScenario) -> None:
    key = budget_allowing_one(k8s)
    with sending(testbed) as kube:
        got = wait_for_budget(kube, [key], 20, keep_open=30)
        got.close()
    assert got.allowed == {key: 1}, got
    assert [m for m, _, _ in kube.sent] == ["WATCH+LIST"], kube.sent


def test_a_streamed_list_the_apiserver_does_not_answer_fails_as_a_list_would_and_no_list_follows(
    testbed: Testbed, k8s: KubeScenario, bed_faults: BedFaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("web", 2, [node], spare)
    monkeypatch.setattr(streamed_list, "LISTED_WITHIN_SECONDS", 1.0)
    with sending(testbed) as kube:
        t0 = time.monotonic()
        with bed_faults.frozen("kube-apiserver"), pytest.raises(KubeError) as failed:
            list_and_watch_node_pods(kube, node)
        took = time.monotonic() - t0
        assert failed.value.status is None and "no answer in 1 s" in str(failed.value), failed.value
        assert took < 10, took
        assert kube.to(PODS) == ["WATCH+LIST"]  # not followed by a LIST that would wait as long again
        assert kube.streams_refused == set()  # a stall is not a refusal: the next pass streams again
        monkeypatch.setattr(streamed_list, "LISTED_WITHIN_SECONDS", 30.0)
        again = list_and_watch_node_pods(kube, node)  # answered again: streamed
        assert again is not None
        again[1].close()

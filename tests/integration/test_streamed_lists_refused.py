"""An apiserver that does not stream lists (WatchList off: Kubernetes 1.33's default, and before 1.32), on a bed of
this file's own: the first streaming list is refused (422), the client remembers it, and every read after it is a
plain LIST and a watch from it; a drain and a wait on budgets work as before."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drain_orchestrator.engine.budget_wait import wait_for_budget
from drain_orchestrator.kube.pods import list_and_watch_node_pods
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.beds import own_bed
from tests.integration.drain_support import budget_allowing_one, drain, sending

pytestmark = pytest.mark.integration

NO_STREAMING_LISTS = "--feature-gates=WatchList=false"
PODS = "/api/v1/pods"


@pytest.fixture(scope="module")
def testbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    """A bed of this file's own: its apiserver does not stream lists."""
    with own_bed(tmp_path_factory, [NO_STREAMING_LISTS]) as bed:
        yield bed


def test_a_refused_streaming_list_is_asked_once_and_the_drain_lists_instead(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("web", 3, [node], spare, grace=1)
    with sending(testbed) as kube:
        assert list_and_watch_node_pods(kube, node) is None
        assert kube.streams_refused == {"pods"}
        assert list_and_watch_node_pods(kube, node) is None  # not asked again
        report = drain(kube, node, timeout=60)
    assert report.drained, report
    assert k8s.pods(node=node) == []
    reads = kube.to(PODS)
    assert reads.count("WATCH+LIST") == 1, reads  # the refused one
    assert "GET" in reads and "WATCH" in reads, reads  # LISTs and the watches from them


def test_a_wait_on_a_budget_lists_it_when_the_apiserver_does_not_stream_lists(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    key = budget_allowing_one(k8s)
    with sending(testbed) as kube:
        got = wait_for_budget(kube, [key], 20, keep_open=30)
        got.close()
        again = wait_for_budget(kube, [key], 20, keep_open=30)
        again.close()
    assert got.allowed == {key: 1} and again.allowed == {key: 1}, (got, again)
    assert kube.streams_refused == {"poddisruptionbudgets"}
    methods = [m for m, _, _ in kube.sent]
    assert methods.count("WATCH+LIST") == 1, methods  # asked once, refused
    assert methods.count("GET") == 2, methods  # each wait listed

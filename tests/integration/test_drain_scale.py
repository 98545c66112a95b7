"""Two drains of one node at once, and a full node of 110 pods."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.integration.drain_support import drain, drainer, pods_on, ready_pods_on, set_unschedulable

pytestmark = pytest.mark.integration


def test_two_concurrent_drains_of_one_node_do_no_harm(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    set_unschedulable(k8s, b, True)
    k8s.deployment("web", 6)
    k8s.wait_pods_ready("app=web", 6)
    set_unschedulable(k8s, b, False)
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)

    lowest = [6]
    stop = threading.Event()

    def watch_budget() -> None:  # the PDB must hold throughout: never fewer than 5 Ready replicas
        while not stop.is_set():
            lowest[0] = min(lowest[0], len(ready_pods_on(k8s, [a, b], "app=web")))
            stop.wait(0.05)

    reports: list[Any] = []
    watcher = threading.Thread(target=watch_budget)
    watcher.start()
    try:
        with drainer(testbed) as kube1, drainer(testbed) as kube2:
            threads = [
                threading.Thread(target=lambda k=k: reports.append(drain(k, a, timeout=120))) for k in (kube1, kube2)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(150)
    finally:
        stop.set()
        watcher.join()
    assert len(reports) == 2 and all(r.drained for r in reports), reports
    assert pods_on(k8s, a) == []
    assert len(k8s.wait_pods_ready("app=web", 6)) == 6
    assert lowest[0] >= 5
    # between them every pod was evicted; a pod evicted twice is harmless (the second is a no-op delete)
    assert len(set(reports[0].evicted) | set(reports[1].evicted)) == 6
    # a drain whose pods waiting on the budget were evicted by the other lists its node at its next turn and finds it
    # drained: it does not keep taking turns on a listing caught up by its pods' watch until its timeout
    assert all(r.elapsed < 60 and r.passes < 40 for r in reports), [(r.elapsed, r.passes) for r in reports]


def test_node_with_110_pods(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    set_unschedulable(k8s, b, True)
    k8s.deployment("many", 110)
    k8s.wait_pods_ready("app=many", 110, timeout=240)
    assert len(pods_on(k8s, a)) == 110
    set_unschedulable(k8s, b, False)
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=120)
    assert report.drained, report
    assert len(report.evicted) == 110
    assert pods_on(k8s, a) == []
    # one LIST per poll instead of one GET per pod per second: well under 2 requests per pod
    assert report.api_calls < 2 * 110, report.api_calls

"""The turns' slot comes from the lag a drain measures itself, on the real bed: its eviction of a pod a budget
admitted, sent while the budget's watch is open, and the fall that eviction causes, read from that watch's queue by
the next wait and timed from when it arrived."""

from __future__ import annotations

import time

import pytest

from drain_orchestrator.drain.turns import TurnLag
from drain_orchestrator.engine.budget_wait import wait_for_budget
from drain_orchestrator.kube.evict import Outcome, evict_pod
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.drain_support import drainer

pytestmark = pytest.mark.integration


def test_an_eviction_a_budget_admitted_is_timed_until_the_watch_shows_the_budget_fall(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    k8s.add_nodes(1)
    k8s.deployment("web", 2)
    pods = k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)
    key = (k8s.ns, "web")
    lag = TurnLag()
    with drainer(testbed) as kube:
        turn = wait_for_budget(kube, [key], 20, keep_open=60, lag=lag)
        try:
            assert turn.allowed == {key: 1}, turn
            sent = time.monotonic()
            evicted = evict_pod(kube, k8s.ns, pods[0].metadata.name, pods[0].metadata.uid)
            assert evicted.outcome is Outcome.EVICTED, evicted
            lag.sent(key, sent)
            time.sleep(1.0)  # the rest of the pass: the fall waits in the watch's queue
            assert lag.samples == 0  # nothing reads the watch between waits
            wait_for_budget(kube, [key], 0.5, resume=turn, keep_open=60, lag=lag).close()
        finally:
            turn.close()
    assert lag.samples == 1, lag
    # timed at the event's arrival, not when the wait read it a second later
    assert lag.lag is not None and 0 < lag.lag < 1.0, lag.lag

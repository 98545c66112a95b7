"""The storm benchmark's harness on a few nodes: every event of a small storm is run as its own execution of the
real handler at once, and the observer sees each node cordoned, drained and its hook completed."""

from __future__ import annotations

import pytest
from bench import bench_storm

from testbed.bed import Testbed

pytestmark = pytest.mark.integration


def test_small_storm_drains_every_node_completes_every_hook_without_throttling(
    testbed: Testbed, monkeypatch: pytest.MonkeyPatch
) -> None:
    res = bench_storm.bench(testbed, n_nodes=3, pods_per_node=3, max_unavailable="50%", setenv=monkeypatch.setenv)

    solo, storm = bench_storm.Phase(**res["solo"]), bench_storm.Phase(**res["storm"])
    for phase, nodes in ((solo, 1), (storm, 3)):
        assert phase.statuses == {"SUCCEEDED": nodes}, phase.errors
        assert phase.nodes == nodes and phase.pods == 3 * nodes
        assert len(phase.cordon_s) == len(phase.drained_s) == len(phase.hook_s) == nodes
        assert phase.all_done_s is not None and phase.all_done_s == max(phase.hook_s + phase.drained_s)
        assert min(phase.cordon_s) > 0 and max(phase.cordon_s) <= min(phase.hook_s)
        assert phase.apf_rejected == 0
        assert phase.kube_requests >= phase.pods  # at least one eviction per pod, seen under our flow schema
        assert phase.aws_calls.get("autoscaling:CompleteLifecycleAction") == nodes
        assert all(sum(ops.values()) > 0 for ops in phase.operations)
    # a drain's node writes: the cordon (its claims with it) and the settle (the report's phase claim with it)
    assert solo.requests.get("patch nodes") == 2, solo.requests
    # its pods' Deployments are read by their ReplicaSets' names: no ReplicaSet is read
    assert not any("replicasets" in kind for kind in solo.requests), solo.requests
    # surges left behind are the schedule's look (SURGE_SWEEP_MINUTES, as deployed), not the lone drain's verdict
    assert "list horizontalpodautoscalers" not in solo.requests, solo.requests
    assert "storm" in bench_storm.render(res)

"""The aws-node-termination-handler comparison's harness on a few nodes (`make bench-nth` runs it at scale).

NTH runs in queue-processor mode on the bed (in-cluster configuration through a private mount namespace, the
chart's RBAC, its own SQS queue and access key); in one round both tools drain a fleet of their own and complete
its hooks, the lower bound (bench/ideal_drain.py) drains a third fleet without a refused eviction, and the
orchestrator is shown events for another cluster's instance and an unknown one. NTH is built once per machine
(cached outside the repository), in the background from the moment this test is collected (fixture
``nth_binary``); a failed build fails this test with the build's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import bench_nth, bench_storm, cpu, nth_report

from testbed.bed import Testbed

pytestmark = pytest.mark.integration


def test_small_side_by_side_drains_both_fleets_and_leaves_stray_hooks_alone(
    testbed: Testbed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nth_binary: Path
) -> None:
    res = bench_nth.bench(
        testbed,
        n_nodes=2,
        pods_per_node=2,
        max_unavailable="50%",
        setenv=monkeypatch.setenv,
        workdir=tmp_path,
        timeout=180,
        stray_variants=(),  # NTH's stray windows last 75 s each: measured by the benchmark only
        runs=1,
    )

    (rnd,) = res["rounds"]
    assert rnd["order"] == ["orchestrator", "nth", "ideal"]
    for tool in ("orchestrator", "nth"):
        phase = bench_storm.Phase(**rnd[tool])
        assert phase.nodes == 2 and phase.pods == 4, tool
        assert len(phase.cordon_s) == len(phase.drained_s) == len(phase.hook_s) == 2, (tool, phase.errors)
        assert phase.kube_requests >= phase.pods, tool  # its evictions were seen under its own flow schema
        assert phase.aws_calls.get("autoscaling:CompleteLifecycleAction") == 2, (tool, phase.aws_calls)
        assert cpu.control_plane(phase.cpu) and cpu.own(phase.cpu), (tool, phase.cpu)  # read from /proc
    assert cpu.TOOL in bench_storm.Phase(**rnd["nth"]).cpu  # NTH runs apart: its own process is counted too
    ideal = bench_storm.Phase(**rnd["ideal"])
    assert ideal.pods == 4 and len(ideal.cordon_s) == len(ideal.drained_s) == 2, ideal.errors
    assert ideal.all_done_s is not None and not ideal.hook_s
    assert ideal.requests.get("create pods/eviction 201") == 4 and "create pods/eviction 429" not in ideal.requests
    assert ideal.requests["patch nodes"] == 2, ideal.requests
    stray = {(s["tool"], s["case"]): s for s in res["stray"]}
    assert {tool for tool, _ in stray} == {"orchestrator"}
    assert all(s["hook"] == "ACTIVE (left alone)" for s in stray.values()), stray  # not ours: not touched
    assert "storm time ÷ lower bound" in nth_report.render(res)

"""Drain benchmark, side by side with `kubectl drain`, on the local test bed (real control plane + kwok).

    uv run --frozen python -m bench.bench_drain [--repeat N] [--grace S] [--scenario a|b|all]

Starts its own bed (or reuses one: DRAIN_TESTBED_DIR=.local/cluster). Scenarios:
  a  one node with 110 pods, no PDB                           goal: ours <= 0.8 x kubectl
  b  10 Deployments x 3 replicas, PDB maxUnavailable 1 each,
     spread over 4 nodes; drain the fullest node               goal: ours <= 0.5 x kubectl
Each run builds a fresh namespace and fresh nodes for each tool, so neither drain sees the other's pods.
Both tools run as a separate process with the same admin kubeconfig: `drain-orchestrator drain` (our CLI)
and `kubectl drain --ignore-daemonsets --delete-emptydir-data --force`. API requests: ours from the
DrainReport, kubectl's from its -v=6 request log. Prints a markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "lambda_src")]

from bench import harness  # noqa: E402
from testbed.bed import Testbed  # noqa: E402
from testbed.kube import KubeScenario  # noqa: E402

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")
_OUR_SUMMARY = re.compile(r"(\d+) evicted.*?; (\d+) API requests, \d+ passes, ([\d.]+) s")
_KUBECTL_REQUEST = re.compile(r'"Response" verb="|\] (GET|POST|PATCH|PUT|DELETE) https?://')


@dataclass
class Run:
    tool: str
    seconds: float
    pods: int
    requests: int
    ok: bool
    engine: float = 0.0  # ours: drain time inside the process (without interpreter start and imports)


def _nodes_unschedulable(k8s: KubeScenario, nodes: list[str], value: bool) -> None:
    for n in nodes:
        k8s.core.patch_node(n, {"spec": {"unschedulable": value}})


def scenario_a(k8s: KubeScenario, grace: int) -> str:
    target, spare = k8s.add_nodes(2)
    _nodes_unschedulable(k8s, [spare], True)
    k8s.deployment("many", 110, grace=grace)
    k8s.wait_pods_ready("app=many", 110, timeout=300)
    _nodes_unschedulable(k8s, [spare], False)
    return target


def scenario_b(k8s: KubeScenario, grace: int) -> str:
    nodes = k8s.add_nodes(4)
    scenario_b_workloads(k8s, grace)
    counts = {n: len(k8s.pods(node=n)) for n in nodes}
    return max(counts, key=lambda n: counts[n])


def scenario_b2(k8s: KubeScenario, grace: int) -> str:
    """As b, but the replicas were packed onto 2 of the 4 nodes (e.g. by an earlier scale-in), so the drained
    node holds 2 replicas of several Deployments and their PDBs refuse the second eviction for a while."""
    nodes = k8s.add_nodes(4)
    _nodes_unschedulable(k8s, nodes[2:], True)
    scenario_b_workloads(k8s, grace)
    _nodes_unschedulable(k8s, nodes[2:], False)
    counts = {n: len(k8s.pods(node=n)) for n in nodes}
    return max(counts, key=lambda n: counts[n])


def scenario_b_workloads(k8s: KubeScenario, grace: int) -> None:
    for i in range(10):
        k8s.deployment(f"app{i}", 3, grace=grace)
        k8s.pdb(f"app{i}", {"app": f"app{i}"}, max_unavailable=1)
    for i in range(10):
        k8s.wait_pods_ready(f"app=app{i}", 3, timeout=120)
        k8s.wait_pdb(f"app{i}", disruptions_allowed=1)


def run_ours(bed: Testbed, node: str, entry: str) -> Run:
    # DRAIN_BENCH_SRC: another checkout's lambda_src, to compare two versions of the drain on one bed
    src = os.environ.get("DRAIN_BENCH_SRC") or str(REPO / "lambda_src")
    env = {**os.environ, "PYTHONPATH": f"{src}:{REPO}"}
    # an installed tool runs from compiled bytecode; this machine sets PYTHONDONTWRITEBYTECODE=1, which would
    # recompile every module on every run and charge that to the drain
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [
        sys.executable,
        "-m",
        f"drain_orchestrator.{entry}",
        "drain",
        node,
        "--kubeconfig",
        str(bed.kubeconfig),
        "--force",
        "--delete-emptydir-data",
        "--timeout",
        "300",
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    took = time.monotonic() - t0
    m = _OUR_SUMMARY.search(proc.stdout)
    pods, requests, engine = (int(m.group(1)), int(m.group(2)), float(m.group(3))) if m else (0, 0, 0.0)
    return Run("drain-orchestrator", took, pods, requests, proc.returncode == 0, engine)


def run_kubectl(bed: Testbed, node: str) -> Run:
    cmd = [
        KUBECTL,
        "--kubeconfig",
        str(bed.kubeconfig),
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--force",
        "--timeout=300s",
        "-v=6",
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    took = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    pods = len(set(re.findall(r"evicting pod (\S+)", out)))  # kubectl repeats the line on every retry
    requests = len(_KUBECTL_REQUEST.findall(out))
    return Run("kubectl drain", took, pods, requests, proc.returncode == 0)


def one(bed: Testbed, build: Any, tool: str, grace: int, entry: str) -> Run:
    api = bed.admin_api_client()
    k8s = KubeScenario(api, prefix="bench")
    try:
        node = build(k8s, grace)
        return run_ours(bed, node, entry) if tool == "ours" else run_kubectl(bed, node)
    finally:
        k8s.cleanup()
        api.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--grace", type=int, default=0, help="terminationGracePeriodSeconds of the pods")
    p.add_argument("--scenario", choices=["a", "b", "b2", "all"], default="all")
    p.add_argument("--entry", choices=["cli.drain", "cli"], default="cli.drain")
    a = p.parse_args(argv)
    bed, owned = harness.attach_or_start(Path(tempfile.mkdtemp(prefix="bench-", dir="/tmp")))
    scenarios = {
        "a": ("a: 1 node, 110 pods, no PDB", scenario_a, 0.8),
        "b": ("b: 10 Deployments x 3, PDB maxUnavailable 1, 4 nodes", scenario_b, 0.5),
        "b2": ("b2: as b, replicas packed on 2 of the 4 nodes", scenario_b2, 0.5),
    }
    chosen = list(scenarios) if a.scenario == "all" else [a.scenario]
    rows = []
    try:
        for key in chosen:
            title, build, goal = scenarios[key]
            runs: dict[str, list[Run]] = {"ours": [], "kubectl": []}
            for i in range(a.repeat):
                order = ("ours", "kubectl") if i % 2 == 0 else ("kubectl", "ours")
                for tool in order:
                    r = one(bed, build, tool, a.grace, a.entry)
                    runs[tool].append(r)
                    print(
                        f"[{key}] {r.tool}: {r.seconds:.2f} s, {r.pods} pods, {r.requests} req, ok={r.ok}",
                        file=sys.stderr,
                        flush=True,
                    )
            ours = statistics.median(r.seconds for r in runs["ours"])
            engine = statistics.median(r.engine for r in runs["ours"])
            theirs = statistics.median(r.seconds for r in runs["kubectl"])
            per = {t: statistics.median(r.requests / max(1, r.pods) for r in rs) for t, rs in runs.items()}
            pods = statistics.median(r.pods for r in runs["ours"])
            rows.append(
                f"| {title} | {pods:.0f} | {theirs:.2f} s | {ours:.2f} s | {engine:.2f} s | "
                f"{ours / theirs:.2f} (goal <= {goal}) | "
                f"{per['kubectl']:.1f} | {per['ours']:.1f} | "
                f"{'yes' if all(r.ok for rs in runs.values() for r in rs) else 'NO'} |"
            )
    finally:
        if owned:
            bed.stop()
    print(f"\nrepeat={a.repeat}, pod grace={a.grace} s, median wall time per drain (process start to exit)\n")
    print(
        "| scenario | pods drained | kubectl drain | drain-orchestrator | ours, engine only | ratio (wall) "
        "| kubectl req/pod | ours req/pod | all drained |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

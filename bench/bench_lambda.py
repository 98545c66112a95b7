"""Lambda benchmarks (not tests): cold import of the handler module beside the naive import set, warm
event-to-cordon latency on loopback through the real handler, durable local runner, moto server and apiserver, and
event-to-hook-completion of terminate drains with the load-balancer gate (its ELBv2 calls and the time it adds).

    make bench-lambda            # = python -m bench.bench_lambda [--imports N] [--events N] [--gates N]

Results go to stdout as a Markdown table; docs/benchmarks.md records them with the command.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HANDLER = "import drain_orchestrator.handler"
# What a straightforward Lambda drainer imports at module level: every client it might need.
NAIVE = (
    "import boto3; import kubernetes.client; import kubernetes.config; "
    "from aws_lambda_powertools import Logger, Metrics; "
    "from aws_lambda_powertools.utilities.parser.models import EventBridgeModel; "
    "import aws_durable_execution_sdk_python"
)


def _import_ms(stmt: str) -> float:
    code = f"import time; t=time.perf_counter(); {stmt}; print((time.perf_counter()-t)*1000)"
    env = {**os.environ, "PYTHONPATH": str(REPO / "lambda_src"), "CLUSTER_NAMES": "blue"}
    # measure with compiled bytecode, as the Lambda bundle ships it (this machine sets PYTHONDONTWRITEBYTECODE=1)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def bench_imports(n: int) -> dict[str, list[float]]:
    _import_ms(HANDLER)  # warm .pyc files: what a deployed bundle has
    _import_ms(NAIVE)
    res: dict[str, list[float]] = {"handler": [], "naive": []}
    for _ in range(n):  # interleaved, so machine noise hits both alike
        res["handler"].append(_import_ms(HANDLER))
        res["naive"].append(_import_ms(NAIVE))
    return res


def bench_event_to_cordon(n: int) -> list[float]:
    sys.path.insert(0, str(REPO))
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    from bench import harness
    from testbed import samples
    from testbed.aws_seed import AwsSeed
    from testbed.kube import KubeScenario

    bed, owned = harness.attach_or_start(REPO / ".local" / "bench-lambda")
    try:
        aws = AwsSeed(bed)
        aws.reset()
        aws.eks_cluster("blue")
        ids = [aws.instance(tags={"kubernetes.io/cluster/blue": "owned"}) for _ in range(n + 1)]
        api = bed.admin_api_client()
        k8s = KubeScenario(api, prefix="bench")
        nodes = aws.nodes_for(k8s, ids)
        env, _ = aws.lambda_env("blue")
        os.environ.update(env)
        from drain_orchestrator.handler import handler
        from drain_orchestrator.workflow import runtime

        marks: dict[str, float] = {}
        runtime.fault_injection = lambda point: marks.setdefault(point, time.perf_counter())
        latencies = []
        for i, iid in enumerate(ids):
            event = samples.ec2_event("rebalance-recommendation.json", instance_id=iid)  # cordon only
            event["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            marks.clear()
            with DurableFunctionTestRunner(handler=handler) as runner:
                t0 = time.perf_counter()
                res = runner.run(input=json.dumps(event), execution_timeout=60)
            assert getattr(res.status, "name", "") == "SUCCEEDED", res.error
            assert k8s.core.read_node(nodes[i]).spec.unschedulable
            if i > 0:  # the first event warms the container (clients, token, DescribeCluster cache)
                latencies.append((marks["after-cordon"] - t0) * 1000)
        k8s.cleanup()
        api.close()
        return latencies
    finally:
        if owned:
            bed.stop()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--imports", type=int, default=9, help="cold-import samples (0: skip)")
    p.add_argument("--events", type=int, default=15, help="event-to-cordon events (0: skip)")
    p.add_argument("--gates", type=int, default=5, help="terminate drains per load-balancer gate case (0: skip)")
    p.add_argument("--delay", type=int, default=5, help="the target groups' deregistration delay, seconds")
    a = p.parse_args()
    if a.imports:
        print_imports(a.imports)
    if a.events:
        print_event_to_cordon(a.events)
    if a.gates:
        from bench.gates import bench_gates, print_gates

        print_gates(bench_gates(a.gates, a.delay), a.delay)
    return 0


def print_imports(n: int) -> None:
    imp = bench_imports(n)
    h, nv = statistics.median(imp["handler"]), statistics.median(imp["naive"])
    print("| cold import (fresh interpreter, warm .pyc) | median ms | min-max ms |")
    print("|---|---|---|")
    print(f"| `import drain_orchestrator.handler` | {h:.0f} | {min(imp['handler']):.0f}-{max(imp['handler']):.0f} |")
    print(
        f"| naive set (boto3 + kubernetes + Powertools + parser + durable SDK) | {nv:.0f} | "
        f"{min(imp['naive']):.0f}-{max(imp['naive']):.0f} |"
    )
    print(f"\nratio handler/naive: {h / nv:.2f}  (goal <= 250 ms and <= 0.7x)\n")


def print_event_to_cordon(n: int) -> None:
    lat = bench_event_to_cordon(n)
    print("| warm event-to-cordon (runner start → node cordoned) | value |")
    print("|---|---|")
    print(f"| median | {statistics.median(lat):.0f} ms |")
    print(f"| p90 | {sorted(lat)[int(0.9 * (len(lat) - 1))]:.0f} ms |")
    print(f"| min-max | {min(lat):.0f}-{max(lat):.0f} ms |")
    print(f"| events | {len(lat)} |")
    print("\n(goal: median <= 100 ms)\n")


if __name__ == "__main__":
    sys.exit(main())

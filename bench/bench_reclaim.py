"""Spot reclaim benchmark (not a test): N Spot interruption warnings at the same instant, each run as its own durable
execution of the real handler, against an emulated account with EC2's request token buckets and a Lambda
concurrency cap (testbed/aws/throttle.py). A run beyond the cap is throttled and requeued as Lambda requeues an
asynchronous invocation (1 s, doubling to 5 min, jittered); an EC2 request finding its bucket empty gets
``RequestLimitExceeded`` and the handler's own retries deal with it.

    make bench-reclaim    # 100 nodes, limits scaled to 100/1,000, then the model (Makefile)
    python -m bench.bench_reclaim --nodes 3 --lambda-concurrency 1 --json out.json

Measures: event → admitted (concurrency), → cordoned, → drained; nodes drained within the warning's 2 minutes;
EC2 requests per node and how many were throttled; Kubernetes requests per pod from the audit log. bench/fleet_model.py
``--reclaim`` takes the JSON and models 1,000 and 5,000 nodes.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import audit_counts, harness, storm
from bench.bench_storm import OWNED, REPO, _run_execution, warm_up
from testbed import samples
from testbed.aws.throttle import EC2_DEFAULT_LIMITS, LAMBDA_DEFAULT_CONCURRENCY, requeue_delay
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario

SPOT_WARNING_S = 120.0


def spot_warning(instance_id: str) -> dict[str, Any]:
    ev = samples.ec2_event("spot-interruption-terminate.json", instance_id=instance_id)
    ev["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return ev


def deliver(aws: AwsSeed, event: dict[str, Any], seed: int, timeout: int = 600) -> dict[str, Any]:
    """One event as Lambda runs an asynchronous invocation: a run the concurrency refuses is requeued after
    ``requeue_delay``; once admitted, the execution runs and gives its concurrency back. Returns its status,
    durable operations, error, how many times it was throttled and when (epoch) it was admitted."""
    rng, requeues = random.Random(seed), 0
    while not aws.acquire_invocation():
        time.sleep(requeue_delay(requeues, rng))
        requeues += 1
    admitted = time.time()
    try:
        status, ops, err, _ = _run_execution(event, timeout)
    except Exception as exc:
        status, ops, err = "CRASHED", {}, f"{type(exc).__name__}: {exc}"[:300]
    finally:
        aws.release_invocation()
    ended = time.time()
    return {"status": status, "operations": ops, "error": err, "requeues": requeues, "admitted": admitted,
            "ended": ended}  # fmt: skip


def storm_of_warnings(aws: AwsSeed, ids: list[str], timeout: int = 600) -> tuple[float, list[dict[str, Any]]]:
    """Every instance's warning delivered at once (one thread each); returns (t0, per-instance results)."""
    results: list[dict[str, Any]] = [{} for _ in ids]
    events = [spot_warning(i) for i in ids]
    gate = threading.Barrier(len(ids) + 1)

    def go(i: int) -> None:
        gate.wait()
        results[i] = deliver(aws, events[i], seed=i, timeout=timeout)

    threads = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(len(ids))]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.time()
    for t in threads:
        t.join(max(1.0, timeout - (time.time() - t0)))
    return t0, results


def bench(
    bed: Testbed,
    n: int,
    pods_per_node: int,
    max_unavailable: str,
    ec2: Any,
    concurrency: int | None,
    shared: bool = True,
) -> Any:
    import os

    from drain_orchestrator.workflow import runtime

    aws = AwsSeed(bed)
    aws.reset()
    aws.eks_cluster("blue")
    api = bed.admin_api_client()
    k8s = KubeScenario(api, prefix="reclaim")
    try:
        storm.wait_for_quiet_bed(k8s)
        t_setup = time.monotonic()
        fleet = storm.seed_fleet(aws, k8s, "ng-spot", n, OWNED)
        storm.seed_workload(k8s, fleet.nodes, pods_per_node, max_unavailable)
        env, _ = aws.lambda_env("blue")
        if not shared:  # as a stack deployed with sharedReads=false: every run retries its own read
            del env["SHARED_READS_TABLE"]
            os.environ.pop("SHARED_READS_TABLE", None)
        os.environ.update(env)
        runtime.reset_config()
        setup_s = time.monotonic() - t_setup
        warm_s = warm_up(aws, k8s)
        aws.account_limits(ec2=ec2, lambda_concurrency=concurrency)
        obs = storm.Observer(k8s, fleet.nodes)
        obs.start()
        before = storm.aws_requests(aws)
        t0, results = storm_of_warnings(aws, fleet.instance_ids)
        obs.finish()
        after = storm.aws_requests(aws)
        limits = aws.account_limits()
        key = env["AWS_ACCESS_KEY_ID"]
        calls = {f"{s}:{a}": c - before.get((k, s, a), 0) for (k, s, a), c in after.items() if k == key}
        drained = obs.drained()
        done = [drained[nd] - t0 for nd in fleet.nodes if nd in drained]
        pods = len(obs.pod_node)
        kube = audit_counts.read(bed.audit_log, audit_counts.ORCHESTRATOR, t0 - 0.01, t0 + max([*done, 0.0]) + 2)
        return {
            "nodes": n,
            "shared_reads": shared,
            "pods": pods,
            "max_unavailable": max_unavailable,
            "setup_s": setup_s,
            "warm_up_s": warm_s,
            "limits": limits,
            "admitted_s": [r["admitted"] - t0 for r in results if r],
            "held_s": [r["ended"] - r["admitted"] for r in results if r],
            "requeues": [r.get("requeues", 0) for r in results],
            "cordon_s": [obs.cordoned[nd] - t0 for nd in fleet.nodes if nd in obs.cordoned],
            "drained_s": done,
            "statuses": dict(Counter(r.get("status", "NOT-FINISHED") for r in results)),
            "errors": sorted({r["error"] for r in results if r.get("error")}),
            "operations": [sum(r["operations"].values()) for r in results if r.get("operations")],
            "aws_calls": {k: v for k, v in calls.items() if v},
            "kube_requests": kube,
        }
    finally:
        aws.account_limits(ec2=False, lambda_concurrency=None)
        runtime.reset_config()
        k8s.cleanup()
        api.close()


def render(res: dict[str, Any]) -> str:
    n, lim = res["nodes"], res["limits"]
    ec2 = lim.get("ec2") or {}
    lam = lim.get("lambda") or {}
    ec2_sent = sum(v for k, v in res["aws_calls"].items() if k.startswith("ec2:"))
    throttled = sum((ec2.get("throttled") or {}).values())
    in_time = sum(1 for d in res["drained_s"] if d <= SPOT_WARNING_S)
    kube = sum(res["kube_requests"].values())
    requeued = [r for r in res["requeues"] if r]
    rows = [
        ("nodes / pods; shared reads", f"{n} / {res['pods']}; {'on' if res.get('shared_reads', False) else 'off'}"),
        ("executions", str(res["statuses"])),
        ("limits", f"EC2 {ec2.get('limits', 'off')}; Lambda concurrency {lam.get('limit', 'off')}"),
        ("event → admitted (Lambda concurrency)", storm.summary(res["admitted_s"])),
        ("runs throttled and requeued", f"{len(requeued)} (requeues {sum(requeued)}; peak concurrency "
                                        f"{lam.get('peak', 'n/a')})"),
        ("event → cordoned", storm.summary(res["cordon_s"])),
        ("event → drained", storm.summary(res["drained_s"])),
        ("drained within the 2-minute warning", f"**{in_time} of {n}**"),
        ("EC2 requests per node (throttled)", f"{ec2_sent / n:.2f} ({throttled / n:.2f}: {throttled} of {ec2_sent})"),
        ("Kubernetes requests per pod (audit log)", f"{kube / max(1, res['pods']):.2f}"),
        ("durable operations per execution (min-max)",
         f"{min(res['operations'])}-{max(res['operations'])}" if res["operations"] else "n/a"),
    ]  # fmt: skip
    out = ["| | Spot reclaim |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)]
    out.append(
        f"\nPDB maxUnavailable {res['max_unavailable']}; setup {res['setup_s']:.0f} s; warm-up {res['warm_up_s']:.2f} s"
    )
    out.append(f"emulator calls: {res['aws_calls']}")
    if res["errors"]:
        out.append(f"errors: {res['errors']}")
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description="Spot reclaim: N interruption warnings at once under account limits")
    p.add_argument("--nodes", type=int, default=300)
    p.add_argument("--pods-per-node", type=int, default=2)
    p.add_argument("--max-unavailable", default="10%", help="PDB maxUnavailable of every Deployment ('none': no PDBs)")
    p.add_argument("--no-ec2-limits", action="store_true", help="leave EC2's token buckets off")
    p.add_argument(
        "--limits-scale",
        type=float,
        default=1.0,
        help="EC2 bucket sizes and refills times this (e.g. 0.3: a 300-node bed against the limits 1,000 nodes meet)",
    )
    p.add_argument("--lambda-concurrency", type=int, default=LAMBDA_DEFAULT_CONCURRENCY, help="0: no cap")
    p.add_argument(
        "--no-shared-reads", dest="shared", action="store_false", help="no shared-reads table (sharedReads=false)"
    )
    p.add_argument("--json", type=Path, help="also write the raw results here")
    a = p.parse_args()
    bed, owned = harness.attach_or_start(REPO / ".local" / "bench-reclaim")
    try:
        with harness.stdout_into(REPO / ".local" / "bench-reclaim-handler.log"):
            ec2: bool | dict[str, list[float]] = not a.no_ec2_limits
            if ec2 and a.limits_scale != 1.0:
                ec2 = {c.value: [s * a.limits_scale, r * a.limits_scale] for c, (s, r) in EC2_DEFAULT_LIMITS.items()}
            res = bench(bed, a.nodes, a.pods_per_node, a.max_unavailable, ec2, a.lambda_concurrency or None, a.shared)
    finally:
        if owned:
            bed.stop()
    if a.json:
        a.json.write_text(storm.dumps(res))
    print(render(res))
    print("\nrequests from the audit log:\n" + audit_counts.render(res["kube_requests"], res["pods"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

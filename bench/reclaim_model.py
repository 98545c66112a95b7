"""A model of a Spot reclaim at any fleet size under the account's limits (not a test): every node's warning at
once; each run waits for Lambda concurrency (a refused run requeued as Lambda does: testbed/aws/throttle.py), then
sends its DescribeInstances against EC2's token bucket (a refused send retried as the handler does: botocore's
jittered backoff for up to 4 sends, then the step's durable retry of 5, 10, 20, 40, 60 s), cordons, drains, and
gives its concurrency back; executions start at most ``STARTS_PER_S`` a second, and the function's concurrency
grows by 1,000 every 10 s up to the account's. Calibrated on one `bench_reclaim --json` run (what a run does once
admitted and once its EC2 read is answered), and checked by simulating that run's own size and limits.

    python -m bench.fleet_model --reclaim .local/reclaim-100-as-1000.json --nodes 1000 5000

With a shared-reads table (the stack's default: drain_orchestrator/shared_reads.py) a refused first read is not
retried on its own: the run leaves its id in the table and waits; whenever the table's lease is free and a waiter
polls, one DescribeInstances answers every id left before it (up to 1,000), and the waiters see their answers at
their next poll. Without one (``--no-shared-reads``), every run retries its own read.

What it assumes: the drain after the cordon takes the calibrated time at any size (on EKS the control plane scales;
on the 2-core bed it did not); a shared round takes ``ROUND_S`` (a lease update, four queries, the read, the
publication in batches of 25: DynamoDB answers in single-digit milliseconds); nothing else of the account spends EC2
or Lambda capacity (other tools and functions would: subtract them).
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.storm import pct
from testbed.aws.throttle import TokenBucket, requeue_delay

SPOT_WARNING_S = 120.0
CLIENT_SENDS = 4  # drain_orchestrator.aws.clients.ADAPTIVE_ATTEMPTS
DURABLE_RETRY_S = (5, 10, 20, 40, 60)  # drain_orchestrator.failures.RETRY_POLICIES[THROTTLED], capped at 60
POLL_S = (0.15, 0.45)  # drain_orchestrator.shared_reads.POLL_SECONDS: a waiter sees its answer
LEASE_TRY_S = (0.8, 2.4)  # drain_orchestrator.shared_reads.LEASE_TRY_SECONDS: a waiter tries the lease
ROUND_IDS = 1000  # drain_orchestrator.shared_reads.ROUND_IDS
ROUND_S = 0.6  # a shared round's table work around its read, at 1,000 ids (40 batch writes)
STARTS_PER_S = 300.0  # durable execution starts per second per Region (adjustable)
SCALE_STEP, SCALE_EVERY_S = 1000, 10.0  # a function's concurrency grows by 1,000 every 10 s, up to the account's


@dataclass(frozen=True)
class Calibration:
    to_describe_s: float  # admitted → its DescribeInstances sent (imports, token, settings)
    to_cordon_s: float  # answered → cordoned
    to_drained_s: float  # cordoned → drained (the budgets' waves on the calibration bed)
    ec2_per_node: float
    held_after_drained_s: float  # the run goes on after its node is drained (verdict, report): concurrency held

    @classmethod
    def of(cls, res: dict[str, Any]) -> Calibration:
        """From the nodes whose read was not throttled: the fastest tenth of event → cordon after admission."""
        admitted, cordon, drained = res["admitted_s"], sorted(res["cordon_s"]), res["drained_s"]
        first = pct(cordon, 10) - min(admitted)
        ec2 = sum(v for k, v in res["aws_calls"].items() if k.startswith("ec2:"))
        throttled = sum(((res["limits"].get("ec2") or {}).get("throttled") or {}).values())
        return cls(
            to_describe_s=first / 2,
            to_cordon_s=first / 2,
            to_drained_s=statistics.fmean(drained) - statistics.fmean(cordon),
            ec2_per_node=(ec2 - throttled) / res["nodes"],
            # runs of the bench before it recorded them: none assumed
            held_after_drained_s=max(
                0.0,
                statistics.fmean(res["held_s"]) - (first + statistics.fmean(drained) - statistics.fmean(cordon)),
            )
            if res.get("held_s")
            else 0.0,
        )


def simulate(
    nodes: int,
    bucket: tuple[float, float],
    concurrency: int,
    cal: Calibration,
    seed: int = 1,
    *,
    shared: bool = True,
    starts_per_s: float = STARTS_PER_S,
) -> dict[str, float]:
    """Event-driven: per node its admission, its DescribeInstances sends, cordon and drained, in seconds."""
    rng = random.Random(seed)
    waiting: list[int] = []  # left their ids in the shared-reads table, in order
    lease_free_at = 0.0
    ec2 = TokenBucket.full(bucket[0], bucket[1], 0.0)
    running, peak, sends, throttled, requeues = 0, 0, 0, 0, 0
    # events start as the durable service admits them
    queue: list[tuple[float, int, str, int, int]] = [(i / starts_per_s, i, "invoke", 0, 0) for i in range(nodes)]
    heapq.heapify(queue)
    cordon: dict[int, float] = {}
    drained: dict[int, float] = {}
    while queue:
        t, i, what, attempt, step = heapq.heappop(queue)
        if what == "invoke":
            if running >= min(concurrency, SCALE_STEP * (1 + int(t // SCALE_EVERY_S))):
                requeues += 1
                heapq.heappush(queue, (t + requeue_delay(attempt, rng), i, "invoke", attempt + 1, 0))
                continue
            running += 1
            peak = max(peak, running)
            heapq.heappush(queue, (t + cal.to_describe_s, i, "describe", 0, 0))
        elif what == "describe":
            sends += 1
            if ec2.take(t):
                cordon[i] = t + cal.to_cordon_s
                drained[i] = cordon[i] + cal.to_drained_s
                heapq.heappush(queue, (drained[i] + cal.held_after_drained_s, i, "done", 0, 0))
                continue
            throttled += 1
            if shared:  # the single first try was refused: leave the id, poll for an answer or a free lease
                waiting.append(i)
                heapq.heappush(queue, (t + rng.uniform(*POLL_S), i, "poll", 0, 0))  # its first try: at once
                continue
            if attempt + 1 < CLIENT_SENDS:  # botocore standard backoff: rand x 2^attempt
                delay = rng.random() * min(20.0, 2.0**attempt)
                heapq.heappush(queue, (t + delay, i, "describe", attempt + 1, step))
            else:  # the step fails as THROTTLED; its durable retry comes back after the policy's delay
                delay = DURABLE_RETRY_S[min(step, len(DURABLE_RETRY_S) - 1)]
                heapq.heappush(queue, (t + delay, i, "describe", 0, step + 1))
        elif what == "poll":
            if i in cordon:
                continue
            if t < lease_free_at or not waiting:
                heapq.heappush(queue, (t + rng.uniform(*LEASE_TRY_S), i, "poll", 0, 0))
                continue
            sends += 1
            lease_free_at = t + ROUND_S
            if not ec2.take(t):
                throttled += 1
                lease_free_at = t  # a refused round gives the lease back at once
                heapq.heappush(queue, (t + rng.uniform(*LEASE_TRY_S), i, "poll", 0, 0))
                continue
            round_ids, waiting[:] = waiting[:ROUND_IDS], waiting[ROUND_IDS:]
            for j in round_ids:  # each waiter sees its answer at its next poll after the publication
                cordon[j] = t + ROUND_S + rng.uniform(0, POLL_S[1]) + cal.to_cordon_s
                drained[j] = cordon[j] + cal.to_drained_s
                heapq.heappush(queue, (drained[j] + cal.held_after_drained_s, j, "done", 0, 0))
        else:
            running -= 1
    return _row(list(cordon.values()), list(drained.values()), sends, throttled, nodes, requeues, peak)


def _row(
    cordon: list[float], drained: list[float], sends: float, throttled: float, nodes: int, requeues: int, peak: float
) -> dict[str, float]:
    return {
        "cordon_p50": statistics.median(cordon),
        "cordon_p99": pct(cordon, 99),
        "cordon_max": max(cordon),
        "drained_max": max(drained),
        "in_time": sum(1 for x in drained if x <= SPOT_WARNING_S),
        "ec2_per_node": sends / nodes,
        "throttled_per_node": throttled / nodes,
        "requeues": requeues,
        "peak": peak,
    }


def _limits(res: dict[str, Any]) -> tuple[tuple[float, float], int]:
    ec2 = (res["limits"].get("ec2") or {}).get("limits", {}).get("non-mutating", [1e9, 1e9])
    lam = (res["limits"].get("lambda") or {}).get("limit", 10**9)
    return (float(ec2[0]), float(ec2[1])), int(lam)


def add_reclaim_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reclaim", type=Path, required=True, help="a bench_reclaim --json result")
    p.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    p.add_argument("--bucket", type=float, nargs=2, default=[100, 20], help="DescribeInstances bucket: size refill/s")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1000], help="Lambda concurrency available")
    p.add_argument(
        "--no-shared-reads", dest="shared", action="store_false", help="model runs that retry their own reads only"
    )
    p.add_argument(
        "--drain-seconds",
        type=float,
        nargs="+",
        help="cordoned → drained, an input like a storm's wave time (default: the calibration run's)",
    )


def render(res: dict[str, Any], cal: Calibration, rows: list[tuple[str, dict[str, float]]]) -> str:
    out = [
        f"calibrated on the {res['nodes']}-node run: admitted → cordoned {cal.to_describe_s + cal.to_cordon_s:.2f} s "
        f"unthrottled, cordoned → drained {cal.to_drained_s:.1f} s, then held {cal.held_after_drained_s:.1f} s, "
        f"{cal.ec2_per_node:.2f} EC2 reads a node",
        "",
        "| run | event → cordon p50 / p99 / max | last drained | drained ≤ 2 min | EC2 sends (throttled) a node | "
        "runs requeued | peak concurrency |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in rows:
        out.append(
            f"| {name} | {s['cordon_p50']:.1f} / {s['cordon_p99']:.1f} / {s['cordon_max']:.1f} s | "
            f"{s['drained_max']:.0f} s | {s['in_time']:.0f} | {s['ec2_per_node']:.2f} ({s['throttled_per_node']:.2f})"
            f" | {s['requeues']:.0f} | {s['peak']:.0f} |"
        )
    return "\n".join(out)


def measured_row(res: dict[str, Any]) -> dict[str, float]:
    ec2 = sum(v for k, v in res["aws_calls"].items() if k.startswith("ec2:"))
    throttled = sum(((res["limits"].get("ec2") or {}).get("throttled") or {}).values())
    peak = float((res["limits"].get("lambda") or {}).get("peak", 0))
    return _row(res["cordon_s"], res["drained_s"], ec2, throttled, res["nodes"], sum(res["requeues"]), peak)


def reclaim_main(a: argparse.Namespace) -> int:
    res = json.loads(a.reclaim.read_text())
    cal = Calibration.of(res)
    bucket, cap = _limits(res)
    n = res["nodes"]
    rows = [
        (f"{n} nodes, measured", measured_row(res)),
        (
            f"{n} nodes, model (bucket {bucket[0]:g}/{bucket[1]:g}, concurrency {cap})",
            simulate(n, bucket, cap, cal, shared=a.shared),
        ),
    ]
    for drain_s in a.drain_seconds or [cal.to_drained_s]:
        at = replace(cal, to_drained_s=drain_s)
        for nodes in a.nodes:
            for c in a.concurrency:
                limits = f"bucket {a.bucket[0]:g}/{a.bucket[1]:g}, concurrency {c}, drain {drain_s:g} s"
                name = f"{nodes} nodes, model ({limits})"
                rows.append((name, simulate(nodes, (a.bucket[0], a.bucket[1]), c, at, shared=a.shared)))
    print(render(res, cal, rows))
    return 0

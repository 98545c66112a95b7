"""A model of a termination storm at any fleet size (not a test): Kubernetes requests, durable operations, Lambda
compute and cost per drain, calibrated on storm runs of `bench_storm --json` and checked against the others.

    python -m bench.fleet_model .local/storm-50x2.json .local/storm-100x2.json .local/storm-200x2.json --nodes 1000

What it assumes, from the measurements (docs/benchmarks.md, "Fleet: 50, 100 and 200 nodes, and a model of 1,000"):
- a drain's requests are its solo drain's (the same pods alone: cordon, lists, evictions, verdict), plus a few for
  being in a storm (the first wave's reads of the draining nodes and budgets, its budget watch), plus a rate per
  second it waits behind the storm's budgets (node checks, budget watches, its turns' passes): a line through the
  calibration runs' extra requests against their mean wait;
- durable operations and log volume per drain do not grow with the storm (no drain goes held while its budgets move);
- an execution is billed from its event to its hook's completion (it waits inside its pass, not durably);
- the storm lasts waves x one wave's time, where the waves are set by the budgets (a Deployment spread one replica a
  node under `maxUnavailable: 10%` needs 10) and a wave's time by the control plane, so it is an input, not a
  prediction: on the 2-core bed it grows with the fleet (the apiserver, etcd, the scheduler and every execution share
  the CPU); on EKS the control plane scales with the load.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.costs import MEMORY_GB, PRICE_GB_SECOND, PRICE_LOG_GB, PRICE_OPERATION, PRICE_REQUEST
from bench.reclaim_model import add_reclaim_arguments, reclaim_main


@dataclass(frozen=True)
class Run:
    """What one `bench_storm --json` run measured, per drain of its storm."""

    nodes: int
    pods_per_node: float
    solo_requests: float  # the solo drain's Kubernetes requests (the same pods, no storm)
    solo_drained_s: float
    requests: float  # per drain in the storm
    wait_s: float  # mean seconds a drain of the storm waited beyond the solo's time (event → drained)
    billed_s: float  # mean event → hook completed: what an execution is billed for
    operations: float  # durable operations per execution (mean)
    invocations: float  # per execution: one, and one more per durable wait
    log_bytes: float  # handler output per drained node
    storm_s: float  # all drained and hooks completed
    refusals: float  # PDB refusals per pod

    @classmethod
    def of(cls, res: dict[str, Any]) -> Run:
        solo, storm = res["solo"], res["storm"]
        n = storm["nodes"]
        ops = [sum(o.values()) for o in storm["operations"]]
        waits = [o.get("WAIT", 0) for o in storm["operations"]]
        return cls(
            nodes=n,
            pods_per_node=storm["pods"] / n,
            solo_requests=float(sum(solo["requests"].values())),
            solo_drained_s=statistics.fmean(solo["drained_s"]),
            requests=sum(storm["requests"].values()) / n,
            wait_s=max(0.0, statistics.fmean(storm["drained_s"]) - statistics.fmean(solo["drained_s"])),
            billed_s=statistics.fmean(storm["hook_s"]),
            operations=statistics.fmean(ops),
            invocations=1 + statistics.fmean(waits),
            log_bytes=res["log"]["bytes_per_node"],
            storm_s=storm["all_done_s"] or float("nan"),
            refusals=storm["eviction_429"] / storm["pods"],
        )


@dataclass(frozen=True)
class Model:
    solo_requests: float
    in_storm: float  # requests a drain sends because others drain too (the first wave's reads, its budget watch)
    per_wait_second: float  # requests a drain sends per second it waits behind the storm
    solo_drained_s: float
    operations: float
    invocations: float
    log_bytes: float

    @classmethod
    def calibrated(cls, runs: list[Run]) -> Model:
        """From one run: every extra request is put on the wait. From two: a line through both (extra requests
        against the wait), so a drain in a storm pays ``in_storm`` once and ``per_wait_second`` while it waits."""
        a, b = runs[0], runs[-1]
        extra_a, extra_b = a.requests - a.solo_requests, b.requests - b.solo_requests
        if len(runs) > 1 and b.wait_s != a.wait_s:
            rate = (extra_b - extra_a) / (b.wait_s - a.wait_s)
            fixed = extra_a - rate * a.wait_s
        else:
            rate, fixed = (extra_a / a.wait_s if a.wait_s > 0 else 0.0), 0.0
        return cls(a.solo_requests, fixed, rate, a.solo_drained_s, a.operations, a.invocations, a.log_bytes)

    def requests(self, wait_s: float) -> float:
        return self.solo_requests + self.in_storm + self.per_wait_second * wait_s

    def storm(self, nodes: int, waves: int, wave_s: float) -> dict[str, float]:
        """A storm of ``nodes`` drains whose budgets let them go in ``waves`` of ``wave_s`` seconds each: the drains
        of wave k wait k waves, so on average (waves - 1) / 2 of them."""
        wait = (waves - 1) / 2 * wave_s
        per_drain = self.requests(wait)
        billed = self.solo_drained_s + wait
        cost = {
            "operations": self.operations * PRICE_OPERATION,
            "compute": billed * MEMORY_GB * PRICE_GB_SECOND,
            "requests": self.invocations * PRICE_REQUEST,
            "logs": self.log_bytes / 1e9 * PRICE_LOG_GB,
        }
        return {
            "storm_s": waves * wave_s,
            "wait_s": wait,
            "requests_per_drain": per_drain,
            "requests": per_drain * nodes,
            "requests_per_s": per_drain * nodes / (waves * wave_s),
            "operations": self.operations * nodes,
            "billed_s_per_drain": billed,
            "cost_per_drain": sum(cost.values()),
            "cost": sum(cost.values()) * nodes,
            **{f"cost_{k}": v * nodes for k, v in cost.items()},
        }


def waves_of(max_unavailable: str) -> int:
    """Waves of a Deployment spread one replica a node when every node goes: 1 / maxUnavailable."""
    if max_unavailable in ("none", "100%"):
        return 1
    return math.ceil(100 / float(max_unavailable.rstrip("%")))


def render(runs: list[Run], model: Model, calibration: list[Run], nodes: int, waves: int, wave_s: list[float]) -> str:
    sizes = " and ".join(f"{r.nodes}" for r in calibration)
    out = [
        f"calibrated on the {sizes}-node runs: a drain alone {model.solo_requests:.0f} requests, in a storm "
        f"{model.in_storm:.1f} more and {model.per_wait_second:.3f} a second it waits; "
        f"{model.operations:.0f} durable operations, {model.log_bytes / 1000:.1f} KB of logs per drain",
        "",
        "| run | requests per drain: measured | model (from its measured wait) | error | wait, s | operations | "
        "refusals per pod |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        predicted = model.requests(r.wait_s)
        err = (predicted - r.requests) / r.requests
        out.append(
            f"| {r.nodes} nodes x {r.pods_per_node:.0f} pods | {r.requests:.1f} | {predicted:.1f} | {err:+.0%} | "
            f"{r.wait_s:.1f} | {r.operations:.0f} | {r.refusals:.3f} |"
        )
    out += [
        "",
        f"{nodes} nodes, {waves} waves (one wave's time is an input):",
        "",
        "| wave | storm | requests per drain | requests | requests/s | durable operations | billed s per drain "
        "| $ per drain | $ for the storm |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for w in wave_s:
        s = model.storm(nodes, waves, w)
        out.append(
            f"| {w:g} s | {s['storm_s']:.0f} s | {s['requests_per_drain']:.1f} | {s['requests']:,.0f} | "
            f"{s['requests_per_s']:.0f} | {s['operations']:,.0f} | {s['billed_s_per_drain']:.1f} | "
            f"{s['cost_per_drain']:.6f} | {s['cost']:.3f} (operations {s['cost_operations']:.3f}, compute "
            f"{s['cost_compute']:.3f}) |"
        )
    return "\n".join(out)


def main() -> int:
    if "--reclaim" in sys.argv[1:]:
        r = argparse.ArgumentParser(description="model a Spot reclaim of any size from a bench_reclaim --json run")
        add_reclaim_arguments(r)
        return reclaim_main(r.parse_args())
    p = argparse.ArgumentParser(description="model a storm of any size from bench_storm --json runs")
    p.add_argument("runs", nargs="+", type=Path, help="bench_storm --json results, smallest first")
    p.add_argument("--calibrate", type=int, default=2, help="how many of the runs (the first) calibrate the model")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--wave-seconds", type=float, nargs="+", default=[2.0, 9.0])
    a = p.parse_args()
    results = [json.loads(path.read_text()) for path in a.runs]
    runs = [Run.of(r) for r in results]
    calibration = runs[: max(1, min(a.calibrate, len(runs)))]
    model = Model.calibrated(calibration)
    print(render(runs, model, calibration, a.nodes, waves_of(results[0]["max_unavailable"]), a.wave_seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A storm behind a slow budget (not a test): Lambda time held by drains waiting for their turn, with far turns
waited for durably (the shipped rule, drain/turn_queue.py) and with every drain watching until its turn.

    make bench-turn-queue        # = python -m bench.turn_queue [--drains N] [--rise-seconds S] [--rounds R]

One pod a node (anti-affinity) under a budget that allows one disruption; a replacement becomes Ready only when the
next spare node opens, one every ``--rise-seconds``, as a rollout with slow readiness probes admits pods. Each drain
runs its passes the way the workflow does (workflow/drain_flow.py): a pass that ends queued or held is followed by
the wait the flow would make durably (here a sleep of that thread: no pass, no Lambda held), then a new pass. Both
cases run on the same bed in alternating rounds, each on fresh nodes. Reported: the seconds the drains spent in
passes (what Lambda bills and what holds concurrency), their share of the drains' time, when the last node was
drained after the first spare opened, and the passes run. Starts its own bed (or reuses DRAIN_TESTBED_DIR's).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "lambda_src")]

from drain_orchestrator.drain.options import DrainOptions  # noqa: E402
from drain_orchestrator.engine.drainer import drain_node  # noqa: E402
from drain_orchestrator.engine.held_pass import HoldCheck  # noqa: E402
from drain_orchestrator.kube.node_claim import look_at  # noqa: E402
from drain_orchestrator.kube.rest import Kube  # noqa: E402
from drain_orchestrator.pacing import HELD_LINGER_SECONDS  # noqa: E402
from testbed.kube import UNSCHEDULABLE_TAINT, KubeScenario  # noqa: E402

DRAIN_USER, DRAIN_GROUP = "drain-bench", "drain-orchestrator"  # the group infra/k8s/rbac.yaml binds
HELD_RECHECK_SECONDS = 5.0  # a held pass's wait here (the flow's first held wait is RECHECK_MIN_SECONDS)


@dataclass
class StormRun:
    """One storm's drains: seconds each spent in passes and until drained, each queued pass's wait."""

    in_pass: dict[str, float] = field(default_factory=dict)
    took: dict[str, float] = field(default_factory=dict)
    queued: list[float] = field(default_factory=list)
    passes: int = 0
    opened: float = 0.0  # seconds from the start until the last spare opened
    errors: list[BaseException] = field(default_factory=list)

    @property
    def held_share(self) -> float:
        return sum(self.in_pass.values()) / max(1e-9, sum(self.took.values()))

    @property
    def last(self) -> float:
        return max(self.took.values(), default=float("inf"))


def slow_budget(k8s: KubeScenario, nodes: list[str]) -> list[str]:
    """One pod on each of ``nodes`` under a budget allowing one disruption; returns as many spares, cordoned."""
    drains = len(nodes)
    spares = k8s.add_nodes(drains)
    for s in spares:
        k8s.core.patch_node(s, {"spec": {"unschedulable": True}})
    for s in spares:  # the scheduler places from its cache: the cordon must be seen before the pods are created
        k8s.wait_for(functools.partial(k8s.node_tainted, s, UNSCHEDULABLE_TAINT), what="the spares' cordon seen")
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [*nodes, *spares]}]}
    apart = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [apart]},
    }
    k8s.deployment("web", drains, spec_extra={"affinity": affinity})
    pods = k8s.wait_pods_ready("app=web", drains, timeout=180)
    misplaced = [p.metadata.name for p in pods if p.spec.node_name not in nodes]
    assert misplaced == [], f"{misplaced} landed on a spare"
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)
    return spares


def open_spares(k8s: KubeScenario, spares: list[str], rise_seconds: float) -> float:
    """Uncordon one spare every ``rise_seconds`` (the budget admits a pod each time a replacement becomes Ready);
    returns the seconds it took."""
    start = time.monotonic()
    for s in spares:
        threading.Event().wait(rise_seconds)
        k8s.core.patch_node(s, {"spec": {"unschedulable": False}})
    return time.monotonic() - start


def run_storm(
    client: Callable[[], Any],
    k8s: KubeScenario,
    nodes: list[str],
    spares: list[str],
    options: DrainOptions,
    rise_seconds: float,
    *,
    limit: float = 600.0,
) -> StormRun:
    """Drain ``nodes`` at once, each with its own client (``client()``, closed after), while one spare opens every
    ``rise_seconds``."""
    out = StormRun()
    lock = threading.Lock()
    gate = threading.Barrier(len(nodes) + 1)

    def drain(node: str) -> None:
        api = client()
        try:
            kube = Kube(api, pool_size=8)
            now = time.time()  # the drain claim an execution takes: what makes the others count this node draining
            assert look_at(kube, node, f"run-{node}", now + limit, now, 120).claim.holder == f"run-{node}"
            gate.wait()
            start = time.monotonic()
            spent, passes = 0.0, 0
            while time.monotonic() - start < limit:
                hold = HoldCheck(linger=HELD_LINGER_SECONDS)
                began = time.monotonic()
                report = drain_node(kube, node, options, timeout=120, hold=hold)
                spent, passes = spent + time.monotonic() - began, passes + 1
                if report.drained:
                    break
                if hold.queued and hold.wake_at is not None:
                    with lock:
                        out.queued.append(hold.wake_at - time.time())
                back = hold.wake_at if hold.queued and hold.wake_at else time.time() + HELD_RECHECK_SECONDS
                threading.Event().wait(max(1.0, back - time.time()))  # the flow's durable wait
            with lock:
                out.in_pass[node], out.took[node] = spent, time.monotonic() - start
                out.passes += passes
        except BaseException as exc:  # reported with the run
            out.errors.append(exc)
        finally:
            api.close()

    threads = [threading.Thread(target=drain, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    gate.wait()
    out.opened = open_spares(k8s, spares, rise_seconds)
    for t in threads:
        t.join(limit)
    return out


def _impersonating(bed: Any) -> Callable[[], Any]:
    def client() -> Any:
        api = bed.admin_api_client()
        api.set_default_header("Impersonate-User", DRAIN_USER)
        api.set_default_header("Impersonate-Group", DRAIN_GROUP)
        return api

    return client


def main(argv: list[str] | None = None) -> int:
    from bench import harness

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--drains", type=int, default=20)
    p.add_argument("--rise-seconds", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=1)
    a = p.parse_args(argv)
    cases = {"far turns waited for durably (shipped)": DrainOptions(), "every drain watching until its turn": None}
    bed, owned = harness.attach_or_start(Path(tempfile.mkdtemp(prefix="bench-", dir="/tmp")))
    runs: dict[str, list[StormRun]] = {c: [] for c in cases}
    try:
        for i in range(a.rounds):
            for name in cases if i % 2 == 0 else reversed(list(cases)):
                options = cases[name] or replace(DrainOptions(), queue_after=float("inf"))
                k8s = KubeScenario(bed.admin_api_client(), prefix="bq")
                try:
                    nodes = k8s.add_nodes(a.drains)
                    spares = slow_budget(k8s, nodes)
                    run = run_storm(_impersonating(bed), k8s, nodes, spares, options, a.rise_seconds)
                finally:
                    k8s.cleanup()
                    k8s.api_client.close()
                drained = len(run.took)
                print(
                    f"[{name}] drained {drained}/{a.drains}, in passes {sum(run.in_pass.values()):.0f} s "
                    f"({run.held_share:.2f}), last {run.last:.0f} s, {run.passes} passes, queued {len(run.queued)}"
                    + (f", errors {run.errors[:2]}" if run.errors else ""),
                    file=sys.stderr,
                    flush=True,
                )
                runs[name].append(run)
    finally:
        if owned:
            bed.stop()
    print(f"\n{a.drains} drains behind one budget, a pod admitted every {a.rise_seconds:g} s, {a.rounds} round(s)\n")
    print("| case | Lambda seconds in passes | share of the drains' time | last drained | passes | queued passes |")
    print("|---|---|---|---|---|---|")
    for name, rs in runs.items():
        med = statistics.median
        held, share = med(sum(r.in_pass.values()) for r in rs), med(r.held_share for r in rs)
        last, passes, queued = med(r.last for r in rs), med(r.passes for r in rs), med(len(r.queued) for r in rs)
        print(f"| {name} | {held:.0f} s | {share:.2f} | {last:.0f} s | {passes:.0f} | {queued:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

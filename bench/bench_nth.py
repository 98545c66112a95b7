"""Side-by-side benchmark (not a test): the orchestrator and aws-node-termination-handler (NTH, queue-processor
mode, bench/nth.py) on one test bed, with a lower bound (bench/ideal_drain.py), over K rounds. Each round gives
each contender its own fresh ASG of N instances with kwok nodes and an identical workload (its own namespace,
Deployments under PDBs, spare nodes), then runs them one after the other, the orchestrator first in odd rounds and
NTH first in even ones, the lower bound last. A tool's nodes get their terminate lifecycle events at one instant:
the orchestrator as one durable execution of the real handler per event (as bench/bench_storm.py runs them), NTH as
EventBridge envelopes on its SQS queue (one NTH process for all rounds). NTH really cordons and drains its nodes
and completes its hooks. The same observer (bench/storm.py) times all three from the apiserver and the emulator.
Then both tools get events for an instance of another cluster and for an unknown instance (bench/nth_stray.py).

    make bench-nth                        # = python -m bench.bench_nth --nodes 20 --pods-per-node 10 --runs 3
    python -m bench.bench_nth --nodes 3 --pods-per-node 3 --runs 2 --grace 30
    python -m bench.bench_nth --split-cores    # the control plane on CPUs of its own (bench/cpu.py), as on EKS

Results go to stdout as Markdown (bench/nth_report.py); docs/benchmarks.md records them with the command. Reuses a
bed started with `make cluster-up` when DRAIN_TESTBED_DIR is set.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from kubernetes.client.rest import ApiException

from bench import audit_counts, bench_storm, cpu, harness, ideal_drain, nth, nth_report, nth_stray, storm
from bench.bench_storm import Phase
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario

REPO = Path(__file__).resolve().parents[1]
# client-go's own rate limiter (NTH leaves it at the default 5 QPS, burst 10) logs the waits it imposes
THROTTLED = re.compile(r"Waited for ([0-9.]+)s due to client-side throttling")
# its drain library's klog line for an eviction refused by a PDB: counted as an eviction 429, not an error
PDB_REFUSAL = "would violate the pod's disruption budget"
NTH_TAGS = {**bench_storm.OWNED, nth.MANAGED_TAG: ""}


# NTH's configurations for the stray events, in this order (the last one completes hooks, so it goes last): its
# defaults; a tag key of this cluster's own (what its maintainers advise for several clusters on one account);
# the flag that deletes messages for nodes it cannot find (the documented fix for a queue shared by clusters)
STRAY_VARIANTS: tuple[tuple[str, ...], ...] = (
    (),
    ("--managed-tag=aws-node-termination-handler/blue",),
    ("--delete-sqs-msg-if-node-not-found",),
)


def run_nth_phase(
    aws: AwsSeed,
    k8s: KubeScenario,
    fleet: storm.Fleet,
    queue_url: str,
    proc: nth.NthProcess,
    timeout: float,
    since_line: int = 0,
) -> tuple[Phase, dict[str, float]]:
    """All of the fleet's events on NTH's queue at once; waits until every node is drained and every hook
    completed (or NTH exits, or ``timeout``). Returns the phase, with the errors NTH logged from its line
    ``since_line`` on, and APF's dispatched requests per flow schema."""
    ids, nodes = fleet.instance_ids, fleet.nodes
    obs = storm.Observer(k8s, nodes)
    obs.start()
    before, aws_before = storm.snapshot(k8s.api_client), storm.aws_requests(aws)
    events = [nth.unique_id(fleet.event(i)) for i in ids]
    t0 = time.time()
    obs.t0 = t0
    nth.send_events(aws, queue_url, events)
    while time.time() - t0 < timeout and proc.alive():
        if len(storm.hooks_completed(aws, fleet.asg)) == len(ids) and len(obs.drained()) == len(nodes):
            break
        time.sleep(0.5)
    obs.finish()
    after, aws_after = storm.snapshot(k8s.api_client), storm.aws_requests(aws)
    hooks = storm.hooks_completed(aws, fleet.asg)
    results: list[tuple[str, dict[str, int], str] | None] = [
        ("HOOK-COMPLETED" if i in hooks else "HOOK-NOT-COMPLETED", {}, "") for i in ids
    ]
    phase = bench_storm.build_phase(
        aws, fleet, ids, nodes, obs, t0, before, after, aws_before, aws_after, nth.ACCESS_KEY, results,
        flow_schema=nth.FLOW_SCHEMA,
    )  # fmt: skip
    errors = sorted(
        {
            f"{ln.get('message', '')}: {ln.get('error', '')}"[:200]
            for ln in proc.lines()[since_line:]
            if (ln.get("level") in ("error", "fatal", "panic") or "raw" in ln)
            and PDB_REFUSAL not in f"{ln.get('message', '')} {ln.get('raw', '')}"
        }
    )
    if not proc.alive():
        errors.append(f"NTH exited with {proc.proc.returncode}")
    return dataclasses.replace(phase, errors=errors), storm.diff(before, after).dispatched


def round_order(r: int) -> tuple[str, ...]:
    """Who goes when in round ``r`` (from 1): the orchestrator first in odd rounds, NTH first in even ones, so neither
    always meets the bed fresher; the lower bound last."""
    tools = ("orchestrator", "nth") if r % 2 else ("nth", "orchestrator")
    return (*tools, "ideal")


PREFIX = {"orchestrator": "orch", "nth": "nth", "ideal": "ideal"}
TAGS = {"orchestrator": bench_storm.OWNED, "nth": NTH_TAGS, "ideal": {}}


def _cleanup(scenarios: list[KubeScenario], timeout: float = 180) -> None:
    """Remove a round's namespaces and nodes, waiting (at most ``timeout``) until the namespaces are gone, so their
    pods' deletion loads no later round: a Terminating namespace takes no new pods, its pods go at once (grace 0),
    then the nodes."""
    for k in scenarios:
        with contextlib.suppress(ApiException):
            k.core.delete_namespace(k.ns, grace_period_seconds=0)
        with contextlib.suppress(ApiException):
            k.core.delete_collection_namespaced_pod(k.ns, grace_period_seconds=0)
    end = time.monotonic() + timeout
    names = {k.ns for k in scenarios}
    while time.monotonic() < end and names & {n.metadata.name for n in scenarios[0].core.list_namespace().items}:
        time.sleep(1)
    for k in scenarios:
        k.cleanup()


def run_round(
    bed: Testbed,
    aws: AwsSeed,
    api: Any,
    r: int,
    shape: tuple[int, int, str, int],
    queue_url: str,
    proc: nth.NthProcess,
    access_key: str,
    timeout: float,
    last_round: bool = False,
) -> dict[str, Any]:
    """One round: fresh fleets and workloads for the three contenders, then each one's storm in round_order(r).
    ``shape``: nodes, pods per node, PDB maxUnavailable, the pods' grace period. After the last round nothing is
    timed, so its removal is not waited for."""
    n_nodes, pods_per_node, max_unavailable, grace = shape
    k8s = {c: KubeScenario(api, prefix=PREFIX[c]) for c in PREFIX}
    try:
        t_setup = time.monotonic()
        fleets = {c: storm.seed_fleet(aws, k8s[c], f"ng-{PREFIX[c]}-r{r}", n_nodes, TAGS[c]) for c in PREFIX}
        with ThreadPoolExecutor(len(fleets)) as pool:  # mostly waiting for the scheduler and kwok: side by side
            seeded = [
                pool.submit(storm.seed_workload, k8s[c], f.nodes, pods_per_node, max_unavailable, grace=grace)
                for c, f in fleets.items()
            ]
            for s in seeded:
                s.result()
        fleets["orchestrator"].start_actions(aws)
        fleets["nth"].start_actions(aws)
        out: dict[str, Any] = {"round": r, "order": list(round_order(r)), "setup_s": time.monotonic() - t_setup}
        phases: dict[str, Phase] = {}
        bed_procs = [(p.name, p.pid) for p in bed.state.procs]
        for c in round_order(r):
            f = fleets[c]
            procs = bed_procs + ([(cpu.TOOL, proc.proc.pid)] if c == "nth" else [])
            before = cpu.snapshot(procs)
            if c == "orchestrator":
                phases[c] = bench_storm.run_phase(aws, k8s[c], f, f.instance_ids, access_key, timeout=int(timeout))
            elif c == "nth":
                mark = len(proc.lines())
                phases[c], out["nth_dispatched"] = run_nth_phase(aws, k8s[c], f, queue_url, proc, timeout, mark)
                lines = proc.lines()[mark:]
                out["nth_evictions_logged"] = sum(
                    1 for ln in lines if str(ln.get("message", "")).startswith("evicting pod")
                )
                out["nth_client_throttled_s"] = [
                    float(m.group(1)) for ln in lines if (m := THROTTLED.match(str(ln.get("message", ""))))
                ]
            else:
                phases[c] = ideal_drain.run_phase(k8s[c], f.nodes, timeout)
            phases[c] = replace(phases[c], cpu=cpu.spent(before, cpu.snapshot(procs)))
        # both tools counted from the audit log, read once the round is over (its last lines are written)
        phases["orchestrator"] = bench_storm.with_requests(bed, phases["orchestrator"])
        phases["nth"] = bench_storm.with_requests(bed, phases["nth"], audit_counts.NTH)
        return {**out, **{c: asdict(p) for c, p in phases.items()}}
    finally:
        _cleanup(list(k8s.values()), timeout=0 if last_round else 180)


def bench(
    bed: Testbed,
    n_nodes: int,
    pods_per_node: int,
    max_unavailable: str,
    setenv: Callable[[str, str], None] = os.environ.__setitem__,
    workdir: Path = REPO / ".local" / "bench-nth",
    handler_log: Path | None = None,
    timeout: float = 900,
    stray_variants: tuple[tuple[str, ...], ...] = STRAY_VARIANTS,
    nth_flags: tuple[str, ...] = (),
    runs: int = 1,
    grace: int = 0,
    stray: bool = True,
    split_cores: bool = False,
) -> dict[str, Any]:
    """Start NTH, warm the orchestrator up, run ``runs`` rounds (run_round), then the stray events (unless not
    ``stray``). ``setenv`` sets the Lambda's environment (a test passes monkeypatch.setenv). ``split_cores``: the
    control plane on CPUs of its own for the whole run, every contender on the others (cpu.cores_split)."""
    from drain_orchestrator.workflow import runtime

    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    if grace < 0:
        raise ValueError(f"grace must be 0 or more seconds, got {grace}")
    nth.binary()  # fail before any seeding when NTH is not built
    aws = AwsSeed(bed)
    aws.reset()
    aws.eks_cluster("blue")
    api = bed.admin_api_client()
    warm = KubeScenario(api, prefix="warm")
    proc: nth.NthProcess | None = None
    pinned = contextlib.ExitStack()
    try:
        bed_procs = [(p.name, p.pid) for p in bed.state.procs]
        cores = pinned.enter_context(cpu.cores_split(bed_procs)) if split_cores else None
        env, _ = aws.lambda_env("blue")
        env["SURGE_SWEEP_MINUTES"] = "15"  # as the construct deploys it: surges left behind are a schedule's look
        for k, v in env.items():
            setenv(k, v)
        runtime.reset_config()
        queue_url = nth.create_queue(aws)
        proc = nth.start(bed, api, queue_url, workdir / "storm", nth_flags)
        nth_start_s = proc.wait_started()
        warm_s = bench_storm.warm_up(aws, warm)
        shape = (n_nodes, pods_per_node, max_unavailable, grace)
        rounds = [
            run_round(bed, aws, api, r, shape, queue_url, proc, env["AWS_ACCESS_KEY_ID"], timeout, r == runs)
            for r in range(1, runs + 1)
        ]
        proc.stop()
        proc = None
        strays: list[dict[str, Any]] = []
        windows = []
        if stray:
            cases = nth_stray.seed(aws)
            strays = [asdict(o) for o in nth_stray.orchestrator(aws, cases, handler_log)]
            for i, flags in enumerate(stray_variants):
                w, outs = nth_stray.nth_window(bed, aws, api, queue_url, cases, workdir / f"stray-{i}", flags)
                windows.append(asdict(w))
                strays += [asdict(o) for o in outs]
        res: dict[str, Any] = {
            "nth_start_s": nth_start_s,
            "warm_up_s": warm_s,
            "max_unavailable": max_unavailable,
            "grace": grace,
            "nth_flags": list(nth_flags),
            "rounds": rounds,
            "stray": strays,
            "nth_windows": windows,
            "cores": cores,
        }
        res["summary"] = nth_report.summary(res)
        return res
    finally:
        if proc is not None:
            proc.stop()
        pinned.close()
        runtime.reset_config()
        warm.cleanup()
        api.close()


def _at_least(lowest: int, name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"{name} must be at least {lowest}, got {value}")
        return value

    return parse


def main() -> int:
    p = argparse.ArgumentParser(description="the orchestrator and aws-node-termination-handler side by side")
    p.add_argument("--nodes", type=_at_least(1, "--nodes"), default=20, help="nodes per contender and round")
    p.add_argument("--pods-per-node", type=_at_least(1, "--pods-per-node"), default=10)
    p.add_argument("--max-unavailable", default="10%", help="PDB maxUnavailable of every Deployment")
    p.add_argument("--runs", type=_at_least(1, "--runs"), default=3, help="rounds (the tools alternate going first)")
    p.add_argument(
        "--grace", type=_at_least(0, "--grace"), default=0, help="the Deployments' terminationGracePeriodSeconds"
    )
    p.add_argument("--no-stray", action="store_true", help="skip the stray events (three 75 s NTH windows)")
    p.add_argument("--json", type=Path, help="also write the raw results (every round's) here")
    p.add_argument(
        "--split-cores",
        action="store_true",
        help="the control plane on half the CPUs, the contenders (harness, NTH) and the AWS emulator on the others",
    )
    p.add_argument(
        "--nth-flag", action="append", default=[], help="extra NTH flag for its storm, e.g. --nth-flag=--workers=50"
    )
    a = p.parse_args()
    if a.split_cores and (why := cpu.cannot_split()):
        print(f"error: --split-cores: {why}", file=sys.stderr)
        return 2
    try:
        nth.binary()
    except nth.NthMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bed, owned = harness.attach_or_start(REPO / ".local" / "bench-nth-bed")
    log = REPO / ".local" / "bench-nth-handler.log"
    try:
        with harness.stdout_into(log):  # the stray events' outcomes read the handler's log lines from it
            res = bench(
                bed, a.nodes, a.pods_per_node, a.max_unavailable, handler_log=log, nth_flags=tuple(a.nth_flag),
                runs=a.runs, grace=a.grace, stray=not a.no_stray, split_cores=a.split_cores,
            )  # fmt: skip
    finally:
        if owned:
            bed.stop()
    if a.json:
        a.json.write_text(storm.dumps(res))
    print(nth_report.render(res))
    for who in ("orchestrator", "nth", "ideal"):
        counts, pods = nth_report.requests_all_rounds(res, who)
        print(f"\n{nth_report.TITLES[who]}'s requests, all rounds:\n" + audit_counts.render(counts, pods))
    return 0


if __name__ == "__main__":
    sys.exit(main())

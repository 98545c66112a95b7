"""Storm benchmark (not a test): N nodes of one ASG get their terminate lifecycle event at the same instant, each run
as its own durable execution of the real handler (durable local runner, moto server, the real apiserver with EKS
token auth and API priority and fairness), as Lambda would run them. Before the storm, one node of the same fleet
is drained alone: the baseline the storm is compared with.

    make bench-storm                       # = python -m bench.bench_storm --nodes 50 --pods-per-node 20
    python -m bench.bench_storm --nodes 3 --pods-per-node 4 --json out.json

Results go to stdout as Markdown; docs/benchmarks.md records them with the command. Reuses a bed started with
`make cluster-up` when DRAIN_TESTBED_DIR is set.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import audit_counts, harness, storm
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario

REPO = Path(__file__).resolve().parents[1]
OWNED = {"kubernetes.io/cluster/blue": "owned"}
OUR_FLOW_SCHEMA = "global-default"  # the Lambda's identity (group drain-orchestrator) falls in APF's default schema


@dataclass
class Phase:
    """One wave of events (the solo baseline or the storm), timed from the instant the events were delivered."""

    nodes: int
    pods: int
    all_done_s: float | None  # every node drained and its hook completed
    cordon_s: list[float]
    drained_s: list[float]
    hook_s: list[float]
    statuses: dict[str, int]
    kube_requests: float  # dispatched by APF for the tool's flow schema
    apf_rejected: float
    eviction_429: float
    all_429: float
    aws_calls: dict[str, int]  # "service:action" -> count, the tool's own credentials only
    relanded: int = 0  # replacement pods scheduled onto one of these nodes after the event (moved twice)
    operations: list[dict[str, int]] = field(default_factory=list)  # per execution: operation type -> count
    # per execution that cordoned: the checkpoints before its cordon (checkpoints_before_cordon)
    before_cordon: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    t0: float = 0.0  # epoch the events were delivered
    requests: dict[str, int] = field(default_factory=dict)  # the tool's requests from the audit log, by kind
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds during the phase, by process (bench/cpu.py)
    waves: dict[str, Any] = field(default_factory=dict)  # evictions and budget statuses (storm.Observer.waves)

    def per_pod(self) -> float:
        return self.kube_requests / self.pods if self.pods else 0.0


Result = tuple[str, dict[str, int], str] | tuple[str, dict[str, int], str, int | None]


def _run_execution(event: dict[str, Any], timeout: int) -> tuple[str, dict[str, int], str, int | None]:
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    from drain_orchestrator.handler import handler

    # real waits, as in Lambda: a skipped wait would end a held drain's durable wait at once (flattering the
    # storm's time) while its steps read the real clock
    with DurableFunctionTestRunner(handler=handler, skip_time=False) as runner:
        res = runner.run(input=json.dumps(event), execution_timeout=timeout)
        every = list(res.get_all_operations())
        ops = Counter(getattr(op.operation_type, "name", str(op.operation_type)) for op in every)
    status = getattr(res.status, "name", str(res.status))
    return (
        status,
        dict(ops),
        "" if status == "SUCCEEDED" else str(res.error)[:300],
        storm.checkpoints_before_cordon(every),
    )


def _process_worker(i: int, event: dict[str, Any], timeout: int, ready: Any, go: Any, out: Any) -> None:
    """One execution in its own process, as in its own Lambda container: imports done before the storm (the
    container's init), then clients, token and cluster facts made cold by the handler itself."""
    import aws_durable_execution_sdk_python_testing.runner  # noqa: F401

    import drain_orchestrator.handler  # noqa: F401

    ready.put(i)
    go.wait()
    try:
        out.put((i, _run_execution(event, timeout)))
    except Exception as exc:
        out.put((i, ("CRASHED", {}, f"{type(exc).__name__}: {exc}"[:300], None)))


def _run_in_processes(obs: storm.Observer, events: list[dict[str, Any]], timeout: int) -> tuple[float, list[Any]]:
    ctx = multiprocessing.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_process_worker, args=(i, e, timeout, ready, go, out)) for i, e in enumerate(events)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=600)
    t0 = time.time()
    obs.t0 = t0
    go.set()
    results: list[Any] = [None] * len(events)
    for _ in procs:
        i, r = out.get(timeout=max(1.0, timeout - (time.time() - t0)))
        results[i] = r
    for p in procs:
        p.join(30)
    return t0, results


def run_phase(
    aws: AwsSeed,
    k8s: KubeScenario,
    fleet: storm.Fleet,
    ids: list[str],
    access_key: str,
    timeout: int = 900,
    processes: bool = False,
    spread: float = 0.0,
    budgets: bool = False,
) -> Phase:
    """The executions of ``ids``' events at once, or (``spread`` seconds, threads only) each started at a delay
    drawn uniformly over it, the same draws every run, as a storm's events arrive apart; event → cordon is then
    counted from the first start. ``budgets``: the observer also records the budgets' statuses (Phase.waves)."""
    nodes = [fleet.nodes[fleet.instance_ids.index(i)] for i in ids]
    events = [fleet.event(i) for i in ids]
    obs = storm.Observer(k8s, nodes, budgets=budgets)
    obs.start()
    before, aws_before = storm.snapshot(k8s.api_client), storm.aws_requests(aws)
    if processes:
        if spread:
            raise ValueError("a start spread is for executions in threads, not processes")
        t0, results = _run_in_processes(obs, events, timeout)
        return _finish_phase(aws, k8s, fleet, ids, nodes, obs, t0, before, aws_before, access_key, results)
    results: list[Result | None] = [None] * len(ids)
    gate = threading.Barrier(len(ids) + 1)
    draws = random.Random(len(ids))
    delays = [draws.uniform(0.0, spread) for _ in ids]

    def go(i: int) -> None:
        gate.wait()
        time.sleep(delays[i])
        try:
            results[i] = _run_execution(events[i], timeout)
        except Exception as exc:
            results[i] = ("CRASHED", {}, f"{type(exc).__name__}: {exc}"[:300], None)

    threads = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(len(ids))]
    for t in threads:
        t.start()
    gate.wait()
    t0 = time.time()
    obs.t0 = t0
    for t in threads:
        t.join(max(1.0, timeout - (time.time() - t0)))
    return _finish_phase(aws, k8s, fleet, ids, nodes, obs, t0, before, aws_before, access_key, results)


def _finish_phase(
    aws: AwsSeed,
    k8s: KubeScenario,
    fleet: storm.Fleet,
    ids: list[str],
    nodes: list[str],
    obs: storm.Observer,
    t0: float,
    before: Any,
    aws_before: dict[tuple[str, str, str], int],
    access_key: str,
    results: list[Any],
) -> Phase:
    obs.finish()
    after, aws_after = storm.snapshot(k8s.api_client), storm.aws_requests(aws)
    return build_phase(aws, fleet, ids, nodes, obs, t0, before, after, aws_before, aws_after, access_key, results)


def build_phase(
    aws: AwsSeed,
    fleet: storm.Fleet,
    ids: list[str],
    nodes: list[str],
    obs: storm.Observer,
    t0: float,
    before: Any,
    after: Any,
    aws_before: dict[tuple[str, str, str], int],
    aws_after: dict[tuple[str, str, str], int],
    access_key: str,
    results: list[Result | None],
    flow_schema: str = OUR_FLOW_SCHEMA,
) -> Phase:
    hooks = storm.hooks_completed(aws, fleet.asg)
    drained = obs.drained()
    done = []
    for iid, node in zip(ids, nodes, strict=True):
        if iid in hooks and node in drained:
            done.append(max(hooks[iid], drained[node]) - t0)
    counts = storm.diff(before, after)
    calls = {
        f"{s}:{a}": n - aws_before.get((k, s, a), 0)
        for (k, s, a), n in aws_after.items()
        if k == access_key and n - aws_before.get((k, s, a), 0)
    }
    return Phase(
        nodes=len(nodes),
        pods=sum(1 for n in obs.pod_node.values() if n in nodes),
        all_done_s=max(done) if len(done) == len(nodes) else None,
        cordon_s=[obs.cordoned[n] - t0 for n in nodes if n in obs.cordoned],
        drained_s=[drained[n] - t0 for n in nodes if n in drained],
        hook_s=[hooks[i] - t0 for i in ids if i in hooks],
        statuses=dict(Counter(r[0] if r else "NOT-FINISHED" for r in results)),
        kube_requests=counts.dispatched.get(flow_schema, 0.0),
        apf_rejected=counts.apf_rejected,
        eviction_429=counts.eviction_429,
        all_429=counts.all_429,
        aws_calls=calls,
        relanded=len(obs.relanded),
        operations=[r[1] for r in results if r],
        before_cordon=[r[3] for r in results if r and len(r) > 3 and r[3] is not None],
        errors=sorted({r[2] for r in results if r and r[2]}),
        t0=t0,
        waves=obs.waves(t0),
    )


def audit_window(phase: Phase) -> tuple[float, float]:
    """The epochs of the phase's requests in the audit log: from the release on (the phase before it, the warm-up or
    the solo's report, may have ended a moment earlier) to 2 s after the last node done."""
    return phase.t0 - 0.01, phase.t0 + max([*phase.hook_s, *phase.drained_s, 0.0]) + 2.0


def with_requests(bed: Testbed, phase: Phase, who: str = audit_counts.ORCHESTRATOR) -> Phase:
    """The phase with its requests counted from the bed's audit log, from the events to the last node done."""
    return replace(phase, requests=audit_counts.read(bed.audit_log, who, *audit_window(phase)))


def warm_up(aws: AwsSeed, k8s: KubeScenario) -> float:
    """One rebalance event (cordon only) on a node outside the fleet: the container's imports, clients, token and
    cluster facts are then warm, as they are for most executions of a storm. Returns its duration."""
    from testbed import samples

    iid = aws.instance(tags=OWNED)
    aws.nodes_for(k8s, [iid])
    t = time.monotonic()
    status, _, err, _ = _run_execution(samples.ec2_event("rebalance-recommendation.json", instance_id=iid), 120)
    if status != "SUCCEEDED":
        raise RuntimeError(f"warm-up execution {status}: {err}")
    return time.monotonic() - t


def bench(
    bed: Testbed,
    n_nodes: int,
    pods_per_node: int,
    max_unavailable: str,
    setenv: Callable[[str, str], None] = os.environ.__setitem__,
    processes: bool = False,
    spread: float = 0.0,
) -> dict[str, Any]:
    """Seed, warm up, drain one node alone, then the storm on the rest. ``setenv`` sets the Lambda's environment
    (a test passes monkeypatch.setenv, so nothing leaks)."""
    from drain_orchestrator.workflow import runtime

    aws = AwsSeed(bed)
    aws.reset()
    aws.eks_cluster("blue")
    api = bed.admin_api_client()
    k8s = KubeScenario(api, prefix="storm")
    try:
        storm.wait_for_quiet_bed(k8s)
        t_setup = time.monotonic()
        fleet = storm.seed_fleet(aws, k8s, "ng-storm", n_nodes + 1, OWNED)
        storm.seed_workload(k8s, fleet.nodes, pods_per_node, max_unavailable)
        fleet.start_actions(aws)
        env, _ = aws.lambda_env("blue")
        env["SURGE_SWEEP_MINUTES"] = "15"  # as the construct deploys it: surges left behind are a schedule's look
        for k, v in env.items():
            setenv(k, v)
        runtime.reset_config()
        setup_s = time.monotonic() - t_setup
        warm_s = warm_up(aws, k8s)
        key = env["AWS_ACCESS_KEY_ID"]
        solo = with_requests(bed, run_phase(aws, k8s, fleet, fleet.instance_ids[:1], key, processes=processes))
        wave = with_requests(
            bed, run_phase(aws, k8s, fleet, fleet.instance_ids[1:], key, processes=processes, spread=spread)
        )
        return {
            "setup_s": setup_s,
            "warm_up_s": warm_s,
            "solo": asdict(solo),
            "storm": asdict(wave),
            "max_unavailable": max_unavailable,
            "harness": "one process per execution" if processes else "one process, one thread per execution",
            "start_spread_s": spread,
        }
    finally:
        runtime.reset_config()
        k8s.cleanup()
        api.close()


def render(res: dict[str, Any]) -> str:
    solo, wave = Phase(**res["solo"]), Phase(**res["storm"])
    ratio = (
        f"{wave.all_done_s / solo.all_done_s:.1f}x"
        if wave.all_done_s is not None and solo.all_done_s is not None
        else "n/a"
    )

    def spread(values: list[int]) -> str:
        return f"{min(values)}-{max(values)}" if values else "n/a"

    def ops(p: Phase) -> str:
        return spread([sum(o.values()) for o in p.operations])

    def t(v: float | None) -> str:
        return f"{v:.2f} s" if v is not None else "not all done"

    rows = [
        ("nodes / pods on them", f"{solo.nodes} / {solo.pods}", f"{wave.nodes} / {wave.pods}"),
        ("executions", str(solo.statuses), str(wave.statuses)),
        ("all drained + hooks completed", t(solo.all_done_s), f"{t(wave.all_done_s)} (**{ratio}** the solo)"),
        ("event → cordon", storm.summary(solo.cordon_s), storm.summary(wave.cordon_s)),
        ("event → drained", storm.summary(solo.drained_s), storm.summary(wave.drained_s)),
        ("event → hook completed", storm.summary(solo.hook_s), storm.summary(wave.hook_s)),
        ("API requests (APF dispatched, our schema) per pod", f"{solo.per_pod():.2f}", f"{wave.per_pod():.2f}"),
        ("APF rejections (429 from priority and fairness)", f"{solo.apf_rejected:.0f}", f"{wave.apf_rejected:.0f}"),
        ("eviction 429s (PDB refusals) / all 429s", f"{solo.eviction_429:.0f} / {solo.all_429:.0f}",
         f"{wave.eviction_429:.0f} / {wave.all_429:.0f}"),
        ("emulator calls per node", f"{sum(solo.aws_calls.values()) / solo.nodes:.1f}",
         f"{sum(wave.aws_calls.values()) / max(1, wave.nodes):.1f}"),
        ("durable operations per execution (min-max)", ops(solo), ops(wave)),
        ("checkpoints before the cordon per execution (min-max)", spread(solo.before_cordon),
         spread(wave.before_cordon)),
    ]  # fmt: skip
    out = ["| | solo (1 node) | storm |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    out.append(
        f"\nharness: {res.get('harness', 'one process, one thread per execution')}; "
        f"storm's executions started over {res.get('start_spread_s', 0.0):.1f} s; "
        f"PDB maxUnavailable {res['max_unavailable']}; setup {res['setup_s']:.0f} s; warm-up execution (cold "
        f"container, cordon only) {res['warm_up_s']:.2f} s."
    )
    if "log" in res:
        out.append(
            f"handler output (CloudWatch Logs + EMF) per drained node: {res['log']['bytes_per_node']:.0f} bytes, "
            f"{res['log']['lines_per_node']:.1f} lines, of which {res['log']['emf_per_node']:.1f} EMF metric lines"
        )
    out.append(f"emulator calls, solo (cold container): {solo.aws_calls}")
    out.append(f"emulator calls, storm: {wave.aws_calls}")
    if solo.errors or wave.errors:
        out.append(f"errors: {solo.errors + wave.errors}")
    return "\n".join(out)


def log_volume(path: Path, executions: int) -> dict[str, float]:
    lines = [ln for ln in path.read_bytes().splitlines() if ln.startswith(b"{")]
    emf = [ln for ln in lines if b'"_aws"' in ln]
    return {
        "bytes_per_node": sum(len(ln) + 1 for ln in lines) / executions,
        "lines_per_node": len(lines) / executions,
        "emf_per_node": len(emf) / executions,
    }


def main() -> int:
    p = argparse.ArgumentParser(description="storm benchmark: N nodes' terminate events at once")
    p.add_argument("--nodes", type=int, default=50)
    p.add_argument("--pods-per-node", type=int, default=20)
    p.add_argument("--max-unavailable", default="10%", help="PDB maxUnavailable of every Deployment ('none': no PDBs)")
    p.add_argument(
        "--processes",
        action="store_true",
        help="run each execution in its own process (as each has its own Lambda container), not a thread",
    )
    p.add_argument(
        "--start-spread",
        type=float,
        default=0.0,
        help="start the storm's executions over this many seconds (uniform, the same draws every run), not at once",
    )
    p.add_argument("--json", type=Path, help="also write the raw results here")
    a = p.parse_args()
    if a.start_spread < 0 or (a.start_spread > 0 and a.processes):
        p.error("--start-spread must be 0 or more seconds, and is for threads only (not with --processes)")
    bed, owned = harness.attach_or_start(REPO / ".local" / "bench-storm")
    log = REPO / ".local" / "bench-storm-handler.log"
    try:
        with harness.stdout_into(log):  # measured afterwards: the CloudWatch volume of a drain
            res = bench(bed, a.nodes, a.pods_per_node, a.max_unavailable, processes=a.processes, spread=a.start_spread)
        res["log"] = log_volume(log, res["solo"]["nodes"] + res["storm"]["nodes"] + 1)
    finally:
        if owned:
            bed.stop()
    if a.json:
        a.json.write_text(storm.dumps(res))
    print(render(res))
    for name in ("solo", "storm"):
        print(
            f"\nrequests of the {name} from the audit log:\n"
            + audit_counts.render(res[name]["requests"], res[name]["pods"])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

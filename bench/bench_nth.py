"""Side-by-side benchmark (not a test): the orchestrator and aws-node-termination-handler (NTH, queue-processor
mode, bench/nth.py) on one test bed in one run. Each tool gets its own ASG of N instances with kwok nodes and an
identical workload (its own namespace, Deployments under PDBs, spare nodes); each node's terminate lifecycle event
goes to its tool at one instant: to the orchestrator as one durable execution of the real handler per event (as
bench/bench_storm.py runs them), to NTH as EventBridge envelopes on its SQS queue. NTH really cordons and drains
its nodes and completes its hooks. The same observer (bench/storm.py) times both from the apiserver and the
emulator. Then both get events for an instance of another cluster and for an unknown instance
(bench/nth_stray.py).

    make bench-nth                        # = python -m bench.bench_nth --nodes 20 --pods-per-node 10
    python -m bench.bench_nth --nodes 3 --pods-per-node 3

Results go to stdout as Markdown; docs/benchmarks.md records them with the command. Reuses a bed started with
`make cluster-up` when DRAIN_TESTBED_DIR is set.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import audit_counts, bench_storm, harness, nth, nth_stray, storm
from bench.bench_storm import Phase
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario

REPO = Path(__file__).resolve().parents[1]
# client-go's own rate limiter (NTH leaves it at the default 5 QPS, burst 10) logs the waits it imposes
THROTTLED = re.compile(r"Waited for ([0-9.]+)s due to client-side throttling")
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
    aws: AwsSeed, k8s: KubeScenario, fleet: storm.Fleet, queue_url: str, proc: nth.NthProcess, timeout: float
) -> tuple[Phase, dict[str, float]]:
    """All of the fleet's events on NTH's queue at once; waits until every node is drained and every hook
    completed (or NTH exits, or ``timeout``). Returns the phase and APF's dispatched requests per flow schema."""
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
    obs.settle()
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
            for ln in proc.lines()
            if ln.get("level") in ("error", "fatal", "panic") or "raw" in ln
        }
    )
    if not proc.alive():
        errors.append(f"NTH exited with {proc.proc.returncode}")
    return dataclasses.replace(phase, errors=errors), storm.diff(before, after).dispatched


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
) -> dict[str, Any]:
    """Seed both fleets and workloads, start NTH, warm the orchestrator up, run the orchestrator's storm, then
    NTH's, then the stray events. ``setenv`` sets the Lambda's environment (a test passes monkeypatch.setenv)."""
    from drain_orchestrator.workflow import runtime

    nth.binary()  # fail before any seeding when NTH is not built
    aws = AwsSeed(bed)
    aws.reset()
    aws.eks_cluster("blue")
    api = bed.admin_api_client()
    orch_k8s = KubeScenario(api, prefix="orch")
    nth_k8s = KubeScenario(api, prefix="nth")
    proc: nth.NthProcess | None = None
    try:
        t_setup = time.monotonic()
        orch = storm.seed_fleet(aws, orch_k8s, "ng-orch", n_nodes, bench_storm.OWNED)
        nthf = storm.seed_fleet(aws, nth_k8s, "ng-nth", n_nodes, NTH_TAGS)
        storm.seed_workload(orch_k8s, orch.nodes, pods_per_node, max_unavailable)
        storm.seed_workload(nth_k8s, nthf.nodes, pods_per_node, max_unavailable)
        orch.start_actions(aws)
        nthf.start_actions(aws)
        env, _ = aws.lambda_env("blue")
        for k, v in env.items():
            setenv(k, v)
        runtime.reset_config()
        queue_url = nth.create_queue(aws)
        setup_s = time.monotonic() - t_setup
        proc = nth.start(bed, api, queue_url, workdir / "storm", nth_flags)
        nth_start_s = proc.wait_started()
        warm_s = bench_storm.warm_up(aws, orch_k8s)
        orch_phase = bench_storm.run_phase(aws, orch_k8s, orch, orch.instance_ids, env["AWS_ACCESS_KEY_ID"])
        nth_phase, nth_dispatched = run_nth_phase(aws, nth_k8s, nthf, queue_url, proc, timeout)
        orch_phase = bench_storm.with_requests(bed, orch_phase)  # both tools counted from the audit log
        nth_phase = bench_storm.with_requests(bed, nth_phase, audit_counts.NTH)
        lines = proc.lines()
        evictions = sum(1 for ln in lines if str(ln.get("message", "")).startswith("evicting pod"))
        throttled = [float(m.group(1)) for ln in lines if (m := THROTTLED.match(str(ln.get("message", ""))))]
        proc.stop()
        proc = None
        cases = nth_stray.seed(aws)
        stray = [asdict(o) for o in nth_stray.orchestrator(aws, cases, handler_log)]
        windows = []
        for i, flags in enumerate(stray_variants):
            w, outs = nth_stray.nth_window(bed, aws, api, queue_url, cases, workdir / f"stray-{i}", flags)
            windows.append(asdict(w))
            stray += [asdict(o) for o in outs]
        return {
            "setup_s": setup_s,
            "nth_start_s": nth_start_s,
            "warm_up_s": warm_s,
            "max_unavailable": max_unavailable,
            "nth_flags": list(nth_flags),
            "orchestrator": asdict(orch_phase),
            "nth": asdict(nth_phase),
            "nth_dispatched": nth_dispatched,
            "nth_evictions_logged": evictions,
            "nth_client_throttled_s": throttled,
            "stray": stray,
            "nth_windows": windows,
        }
    finally:
        if proc is not None:
            proc.stop()
        runtime.reset_config()
        orch_k8s.cleanup()
        nth_k8s.cleanup()
        api.close()


def render(res: dict[str, Any]) -> str:
    o, n = Phase(**res["orchestrator"]), Phase(**res["nth"])

    def t(v: float | None) -> str:
        return f"{v:.2f} s" if v is not None else "not all done"

    rows = [
        ("nodes / pods on them", f"{o.nodes} / {o.pods}", f"{n.nodes} / {n.pods}"),
        ("outcome per event", str(o.statuses), str(n.statuses)),
        ("all drained + hooks completed", t(o.all_done_s), t(n.all_done_s)),
        ("event → cordon", storm.summary(o.cordon_s), storm.summary(n.cordon_s)),
        ("event → drained", storm.summary(o.drained_s), storm.summary(n.drained_s)),
        ("event → hook completed", storm.summary(o.hook_s), storm.summary(n.hook_s)),
        ("API requests (APF dispatched, the tool's flow schema)",
         f"{o.kube_requests:.0f} ({bench_storm.OUR_FLOW_SCHEMA})", f"{n.kube_requests:.0f} ({nth.FLOW_SCHEMA})"),
        ("API requests per pod", f"{o.per_pod():.2f}", f"{n.per_pod():.2f}"),
        ("replacement pods scheduled onto a node still to drain", str(o.relanded), str(n.relanded)),
        ("APF rejections / eviction 429s (PDB refusals)", f"{o.apf_rejected:.0f} / {o.eviction_429:.0f}",
         f"{n.apf_rejected:.0f} / {n.eviction_429:.0f}"),
        ("AWS calls per node (the tool's access key)", f"{sum(o.aws_calls.values()) / max(1, o.nodes):.1f}",
         f"{sum(n.aws_calls.values()) / max(1, n.nodes):.1f}"),
    ]  # fmt: skip
    out = ["| | orchestrator | aws-node-termination-handler |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    out.append(
        f"\nNTH's extra flags in its storm: {res.get('nth_flags') or 'none'}; "
        f"PDB maxUnavailable {res['max_unavailable']}; setup {res['setup_s']:.0f} s; NTH start-up "
        f"{res['nth_start_s']:.2f} s; orchestrator warm-up execution {res['warm_up_s']:.2f} s."
    )
    out.append(f"AWS calls, orchestrator: {o.aws_calls}")
    out.append(f"AWS calls, NTH: {n.aws_calls}")
    out.append(f"APF dispatched per flow schema during NTH's phase: {res['nth_dispatched']}")
    waits = res.get("nth_client_throttled_s", [])
    out.append(
        f"NTH logged {res.get('nth_evictions_logged', 0)} evictions for {n.pods} pods; client-go's rate limiter "
        f"logged {len(waits)} waits" + (f", longest {max(waits):.1f} s" if waits else "")
    )
    for name, p in (("orchestrator", o), ("NTH", n)):
        if p.errors:
            out.append(f"{name} errors: {p.errors}")
    out += ["", "| event for | tool | outcome | hook afterwards | its log lines naming the instance |"]
    out.append("|---|---|---|---|---|")
    for s in res["stray"]:
        log = "<br>".join(s["log"]) or "none"
        out.append(f"| {s['case']} | {s['tool']} | {s['outcome']} | {s['hook']} | {log} |")
    for w in res["nth_windows"]:
        out.append(
            f"\nNTH {' '.join(w['flags']) or '(defaults)'}, {nth_stray.WINDOW_S:.0f} s: "
            f"{'still running' if w['alive'] else 'exited ' + str(w['exit_code'])}; ReceiveMessage {w['receives']}, "
            f"DeleteMessage {w['deletes']}, CompleteLifecycleAction {w['completes']}; left on the queue: "
            f"{w['queue_left']}"
        )
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description="the orchestrator and aws-node-termination-handler side by side")
    p.add_argument("--nodes", type=int, default=20, help="nodes per tool")
    p.add_argument("--pods-per-node", type=int, default=10)
    p.add_argument("--max-unavailable", default="10%", help="PDB maxUnavailable of every Deployment")
    p.add_argument("--json", type=Path, help="also write the raw results here")
    p.add_argument(
        "--nth-flag", action="append", default=[], help="extra NTH flag for its storm, e.g. --nth-flag=--workers=50"
    )
    a = p.parse_args()
    try:
        nth.binary()
    except nth.NthMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bed, owned = harness.attach_or_start(REPO / ".local" / "bench-nth-bed")
    log = REPO / ".local" / "bench-nth-handler.log"
    try:
        with harness.stdout_into(log):  # the stray events' outcomes read the handler's log lines from it
            res = bench(bed, a.nodes, a.pods_per_node, a.max_unavailable, handler_log=log, nth_flags=tuple(a.nth_flag))
    finally:
        if owned:
            bed.stop()
    if a.json:
        a.json.write_text(storm.dumps(res))
    print(render(res))
    for name in ("orchestrator", "nth"):
        phase = res[name]
        print(f"\n{name}'s requests from the audit log:\n" + audit_counts.render(phase["requests"], phase["pods"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

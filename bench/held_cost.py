"""What a drain held by a PodDisruptionBudget that never allows costs until its deadline: Kubernetes requests, billed
compute, durable operations.

A 48 h hold cannot be run on the real clock, so the long hold comes from the workflow's own pacing functions
(lambda_src/drain_orchestrator/pacing.py: held waits, waits cut at heartbeats and going on after them), fed with
what one pass costs as measured on the bed: a real run of the handler held for a few minutes, its Kubernetes
requests counted from the apiserver's audit log by verb and resource, the billed seconds of its steps from the
durable runner, its operations. The same model is then checked against that run (passes, waits, heartbeats).

    python -m bench.held_cost                      # the model: a 48 h hold with default settings, fed with the
                                                   #   per-pass costs last measured (bench/costs.py)
    python -m bench.held_cost --measure 300        # + a real run held 300 s, and the model fed with its costs

Hold for more than two drain passes (2 x DRAIN_PASS_SECONDS, 240 s): a drain whose deadline is closer ends its first
pass with its respectful minimum (MIN_DRAIN_SECONDS, pacing.pass_budget), before that pass's 30 s watch of the
budget would end it held, and its second pass watches again; a 48 h hold's first pass does not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.costs import (
    FIRST_PASS,
    HELD_PASS,
    HOLD_OUTSIDE_LOOP_OPERATIONS,
    MEMORY_GB,
    POLLING_PASS,
    PRICE_GB_SECOND,
    PassCost,
)
from drain_orchestrator import pacing
from drain_orchestrator.workflow_settings import WorkflowSettings

REPO = Path(__file__).resolve().parents[1]
OWNED = {"kubernetes.io/cluster/blue": "owned"}


@dataclass
class Cost:
    passes: int
    waits: int
    heartbeats: int
    requests: int
    compute_seconds: float

    @property
    def loop_operations(self) -> int:
        return self.passes + self.waits + self.heartbeats

    def row(self, hold: float, fixed_ops: int) -> dict[str, Any]:
        minutes = hold / 60
        return {
            "requests": self.requests,
            "requests/min": round(self.requests / minutes, 2),
            "compute s": round(self.compute_seconds, 1),
            "compute % of hold": round(100 * self.compute_seconds / hold, 3),
            "compute $": round(self.compute_seconds * MEMORY_GB * PRICE_GB_SECOND, 5),
            "durable operations": self.loop_operations + fixed_ops,
        }


def held_model(
    hold: float, ws: WorkflowSettings, heartbeat_timeout: int | None, first: PassCost, later: PassCost
) -> Cost:
    """The held drain of workflow/drain_flow.py: a first pass that lingers, then passes that end at their first
    look, each followed by pacing.held_wait (going on through heartbeats), until the deadline ``hold`` s away."""
    interval = pacing.heartbeat_interval(heartbeat_timeout) if heartbeat_timeout else None
    # the first pass lasts first.seconds, the others later.seconds: shift the horizon by the difference
    horizon = hold - first.seconds + later.seconds
    loop = pacing.paced_loop(horizon, later.seconds, 1, lambda k: pacing.held_wait(k, ws), interval, through_beats=True)
    return Cost(
        passes=loop.steps,
        waits=loop.waits,
        heartbeats=loop.heartbeats,
        requests=round(first.requests + (loop.steps - 1) * later.requests),
        compute_seconds=first.seconds + (loop.steps - 1) * later.seconds,
    )


def polling_model(hold: float, ws: WorkflowSettings, heartbeat_timeout: int | None) -> Cost:
    """The previous loop for comparison: every pass polls for its whole budget, then the recheck wait."""
    interval = pacing.heartbeat_interval(heartbeat_timeout) if heartbeat_timeout else None
    budget = float(ws.drain_pass_seconds)
    loop = pacing.paced_loop(hold, budget, 1, lambda k: pacing.recheck_delay(k, ws), interval)
    per_second = POLLING_PASS.requests / POLLING_PASS.seconds
    return Cost(loop.steps, loop.waits, loop.heartbeats, round(loop.steps * budget * per_second), loop.steps * budget)


def _logged(stamp: str) -> float:
    """Epoch seconds of a log line's or an audit event's time."""
    text = stamp.replace("Z", "+00:00").replace(",", ".").replace(" ", "T", 1)
    if text.endswith("+0000"):
        text = text[:-5] + "+00:00"
    return datetime.fromisoformat(text).timestamp()


def measure(hold: int, heartbeat_timeout: int) -> dict[str, Any]:
    """One real execution of the handler (real clock, default pacing) on a node whose only pod a PDB never lets
    go, until a deadline ``hold`` seconds after the event."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    from bench import audit_counts, harness, storm
    from drain_orchestrator.handler import handler
    from drain_orchestrator.workflow import runtime
    from testbed.aws_seed import AwsSeed
    from testbed.control_plane import AUDIT_GROUP
    from testbed.kube import KubeScenario

    bed, owned = harness.attach_or_start(REPO / ".local" / "bench-held")
    aws = AwsSeed(bed)
    aws.reset()
    aws.eks_cluster("blue")
    api = bed.admin_api_client()
    k8s = KubeScenario(api, prefix="held")
    try:
        ids = aws.asg(
            "ng-held", size=1, tags=OWNED, hooks=({"name": storm.HOOK, "heartbeat_timeout": heartbeat_timeout},)
        )
        fleet = storm.Fleet("ng-held", ids, aws.nodes_for(k8s, ids))
        k8s.deployment("web", 1, nodes=fleet.nodes)
        k8s.wait_pods_ready("app=web", 1)
        k8s.pdb("web", {"app": "web"}, min_available=1)
        k8s.wait_pdb("web", disruptions_allowed=0)
        fleet.start_actions(aws)
        env, _ = aws.lambda_env("blue")
        os.environ.update({**env, "DEADLINE_ASG_TERMINATE_SECONDS": str(hold), "FORCE_DELETE_ON_DEADLINE": "false"})
        runtime.reset_config()
        offset = bed.audit_log.stat().st_size
        t = time.monotonic()
        log = REPO / ".local" / "bench-held" / "handler.log"
        with harness.stdout_into(log), DurableFunctionTestRunner(handler=handler, skip_time=False) as runner:
            res = runner.run(input=json.dumps(fleet.event(ids[0])), execution_timeout=hold + 300)
            ops = list(res.get_all_operations())
        lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
        passes = [x for x in lines if x.get("message") == "drain pass"]
        seconds = time.monotonic() - t
        with bed.audit_log.open("rb") as f:
            f.seek(offset)
            audit = [json.loads(line) for line in f.read().decode().splitlines() if line.strip()]
        audit = [e for e in audit if AUDIT_GROUP in e.get("user", {}).get("groups", [])]
    finally:
        runtime.reset_config()
        k8s.cleanup()
        api.close()
        if owned:
            bed.stop()
    by_kind: Counter[str] = Counter()
    for e in audit:
        ref = e.get("objectRef") or {}
        by_kind[
            f"{audit_counts.verb_of(e)} {ref.get('resource', '?')}"
            f"{'/' + ref['subresource'] if ref.get('subresource') else ''}"
        ] += 1
    names = [str(getattr(op, "name", "")) for op in ops]
    # per pass: the audited requests up to the end of the first pass (with locate and cordon before it), then
    # those between its end and the last pass's end (nothing asks during the waits) shared by the later passes;
    # how long each ran, as it logs it
    ends = [_logged(x["timestamp"]) for x in passes]
    stamps = [_logged(e["requestReceivedTimestamp"]) for e in audit]
    later = passes[1:]
    first = PassCost(sum(t <= ends[0] for t in stamps), passes[0]["seconds"]) if passes else None
    held = (
        PassCost(
            round(sum(ends[0] < t <= ends[-1] + 0.05 for t in stamps) / len(later), 1),
            round(sum(x["seconds"] for x in later) / len(later), 2),
        )
        if later
        else None
    )
    return {
        "status": getattr(res.status, "name", str(res.status)),
        "seconds": round(seconds, 1),
        "operations": len(ops),
        "passes": len(passes),
        "waits": sum(n.startswith("recheck-") for n in names),
        "heartbeats": sum(n.startswith("heartbeat-") for n in names),
        "requests": len(audit),
        "requests_by_kind": dict(by_kind.most_common()),
        "pass_seconds": round(sum(x["seconds"] for x in passes), 2),
        "ended_early": sum(bool(x.get("held_early")) for x in passes),
        "first_pass": asdict(first) if first else None,
        "later_pass": asdict(held) if held else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description="what a PDB-held drain costs until its deadline")
    p.add_argument("--hold-hours", type=float, default=48.0)
    p.add_argument("--heartbeat-timeout", type=int, default=3600, help="the hook's HeartbeatTimeout (AWS default)")
    p.add_argument("--measure", type=int, metavar="SECONDS", help="also run the handler held this long, and compare")
    a = p.parse_args()
    ws = WorkflowSettings()
    hold = a.hold_hours * 3600
    first, later = FIRST_PASS, HELD_PASS
    fixed_ops = int(HOLD_OUTSIDE_LOOP_OPERATIONS.value)
    if a.measure:
        hb = 60
        got = measure(a.measure, hb)
        print(f"measured, held {a.measure} s (default pacing, heartbeat timeout {hb} s): {json.dumps(got, indent=1)}")
        if got["first_pass"] and got["later_pass"]:
            first, later = PassCost(**got["first_pass"]), PassCost(**got["later_pass"])
        same = held_model(a.measure - 2, ws, hb, first, later)  # the loop starts a second or two after the event
        print(f"model for the same hold: {asdict(same)}")
        fixed_ops = got["operations"] - same.loop_operations
        print(f"outside the loop: {fixed_ops} operations")
    now = held_model(hold, ws, a.heartbeat_timeout, first, later)
    before = polling_model(hold, ws, a.heartbeat_timeout)
    print(f"\n{a.hold_hours:g} h hold, default settings, heartbeat timeout {a.heartbeat_timeout} s")
    print(f"per pass: first {asdict(first)}, later {asdict(later)}")
    print(f"| | {' | '.join(now.row(hold, fixed_ops))} |")
    print(f"|---|{'---|' * len(now.row(hold, fixed_ops))}")
    print(f"| before (polling passes) | {' | '.join(str(v) for v in before.row(hold, fixed_ops).values())} |")
    print(f"| now (held passes end early) | {' | '.join(str(v) for v in now.row(hold, fixed_ops).values())} |")
    print(f"loop now: {asdict(now)}; before: {asdict(before)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Durable operations of a drain held by a PodDisruptionBudget that never allows a disruption, until its deadline.

A 48 h hold cannot be run on the real clock, and the local runner's time skipping only skips durable waits (a drain
pass still runs for its real budget). So the count comes from the workflow's own pacing functions (deadlines.py: pass
budget, recheck delays, waits cut at the next heartbeat), checked against a real run of the handler on the bed with
a short deadline: the passes, rechecks and heartbeat steps it records must be the ones this model predicts.

    python -m bench.held_cost                      # the model: a 48 h hold with default settings
    python -m bench.held_cost --measure 90         # + a real run held 90 s, compared with the model
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from drain_orchestrator import deadlines
from drain_orchestrator.workflow_settings import WorkflowSettings

REPO = Path(__file__).resolve().parents[1]
OWNED = {"kubernetes.io/cluster/blue": "owned"}


@dataclass
class Loop:
    passes: int = 0
    rechecks: int = 0
    heartbeats: int = 0  # durable heartbeat steps; beats during a pass are the pass's own (no operation)

    @property
    def operations(self) -> int:
        return self.passes + self.rechecks + self.heartbeats


def model(hold: float, ws: WorkflowSettings, heartbeat_timeout: int | None) -> Loop:
    """The drain loop of workflow/drain_flow.py with every pass blocked for its whole budget, from the first pass
    (t=0, the hook fired just before) until the deadline ``hold`` seconds later."""
    interval = deadlines.heartbeat_interval(heartbeat_timeout) if heartbeat_timeout else None
    now, last_beat, ok, out = 0.0, 0.0, 0, Loop()
    while True:
        out.passes += 1
        end = now + deadlines.pass_budget(now, hold, ws)
        while interval and last_beat + interval <= end:  # the pass's heartbeat thread
            last_beat += interval
        now = end
        if now >= hold:
            return out
        next_beat = last_beat + interval if interval else None
        now += deadlines.wait_seconds(now, float(deadlines.recheck_delay(ok, ws)), hold, next_beat)
        ok += 1
        out.rechecks += 1
        if next_beat is not None and now >= next_beat - 0.5:
            out.heartbeats += 1
            last_beat = now


def measure(hold: int, settings: dict[str, str], heartbeat_timeout: int) -> dict[str, Any]:
    """One real execution of the handler (real clock) on a node whose only pod a PDB never lets go."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    from bench import harness, storm
    from drain_orchestrator.handler import handler
    from drain_orchestrator.workflow import runtime
    from testbed.aws_seed import AwsSeed
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
        os.environ.update({**env, **settings, "DEADLINE_ASG_TERMINATE_SECONDS": str(hold)})
        runtime.reset_config()
        t = time.monotonic()
        with DurableFunctionTestRunner(handler=handler, skip_time=False) as runner:
            res = runner.run(input=json.dumps(fleet.event(ids[0])), execution_timeout=hold + 300)
            ops = list(res.get_all_operations())
        names = [str(getattr(op, "name", "")) for op in ops]
        kinds = Counter(getattr(op.operation_type, "name", str(op.operation_type)) for op in ops)
        return {
            "status": getattr(res.status, "name", str(res.status)),
            "seconds": time.monotonic() - t,
            "operations": len(ops),
            "by_type": dict(kinds),
            "passes": sum(n.startswith("drain-pass-") for n in names),
            "rechecks": sum(n.startswith("recheck-") for n in names),
            "heartbeats": sum(n.startswith("heartbeat-") for n in names),
            "result": (res.result or "")[:400] if isinstance(res.result, str) else str(res.result)[:400],
        }
    finally:
        runtime.reset_config()
        k8s.cleanup()
        api.close()
        if owned:
            bed.stop()


def main() -> int:
    p = argparse.ArgumentParser(description="durable operations of a PDB-held drain until its deadline")
    p.add_argument("--hold-hours", type=float, default=48.0)
    p.add_argument("--heartbeat-timeout", type=int, default=3600, help="the hook's HeartbeatTimeout (AWS default)")
    p.add_argument("--measure", type=int, metavar="SECONDS", help="also run the handler held this long, and compare")
    a = p.parse_args()
    ws = WorkflowSettings()
    long = model(a.hold_hours * 3600, ws, a.heartbeat_timeout)
    print(
        f"model, {a.hold_hours:g} h hold, default settings, heartbeat timeout {a.heartbeat_timeout} s: {asdict(long)}"
    )
    print(f"  loop operations: {long.operations}")
    if a.measure:
        short = {"DRAIN_PASS_SECONDS": "20", "RECHECK_MIN_SECONDS": "5", "RECHECK_MAX_SECONDS": "20"}
        hb = 30
        got = measure(a.measure, short, hb)
        ws_short = WorkflowSettings(drain_pass_seconds=20, recheck_min_seconds=5, recheck_max_seconds=20)
        # the real loop starts after the first steps (decide, cordon, ...), a second or two after the event
        predicted = model(a.measure - 2, ws_short, hb)
        print(f"measured, held {a.measure} s ({short}, heartbeat timeout {hb} s): {got}")
        print(f"model for the same: {asdict(predicted)}; outside the loop: {got['operations'] - predicted.operations}")
        print(f"=> {a.hold_hours:g} h: {long.operations + got['operations'] - predicted.operations} operations")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The load-balancer gate's cost per terminate drain, on the test bed (run by bench_lambda.py, `--gates N`).

Each drain: a fresh ASG instance whose kwok node runs 2 pods (grace 0 s, replacements go to a spare node), an active
lifecycle action, the real handler under the durable local runner with real waits (``skip_time=False``), measured
from ``runner.run()`` to the emulator's CompleteLifecycleAction. Cases, interleaved so machine noise hits all alike:

- ``gate off``: WAIT_FOR_DEREGISTRATION=never, the baseline (the volume gate stays on in every case);
- ``no load balancer``: the gate on, no target group in the account;
- ``instance target``: the instance registered in a controller-tagged instance-mode target group;
- ``ip targets``: the node's pod IPs registered in a controller-tagged ip-mode target group.

The first two run before any target group exists; the last two with both target groups in the account (each
drain's first check looks into both). A stand-in for the AWS Load Balancer Controller deregisters the targets (the
instance on the exclusion label, pod IPs when their pods go); they drain for ``delay`` seconds in the emulator.
ELBv2 calls are the function role's own, from the emulator's record of its calls (testbed/aws/calls.py), and are checked
against the count the gate reports in its summary. The handler's own output goes to .local/bench-gates.log.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness

REPO = Path(__file__).resolve().parents[1]
OWNED = {"kubernetes.io/cluster/blue": "owned"}
LOG = REPO / ".local" / "bench-gates.log"
LB_OPERATIONS = ("gate-pod-ips", "gate-targets-", "gate-wait-")
CASES = ("gate off", "no load balancer", "instance target", "ip targets")


@dataclass
class GateRun:
    case: str
    hook_seconds: float  # event -> lifecycle action completed
    waited_seconds: float  # what the gate reports
    calls: Counter[str] = field(default_factory=Counter)  # ELBv2 action -> count, the function's own
    past_drained: float | None = None  # hook completed this long after the last target finished draining
    step_seconds: float = 0.0  # time inside the gate's own steps (pod IPs, target checks), waits excluded
    operations: int = 0  # durable operations of the load-balancer gate: its steps and its waits


def bench_gates(n: int, delay: int) -> dict[str, list[GateRun]]:
    from testbed.aws_seed import AwsSeed
    from testbed.kube import KubeScenario
    from testbed.load_balancers import target_group

    bed, owned = harness.attach_or_start(REPO / ".local" / "bench-lambda")
    saved = dict(os.environ)
    try:
        LOG.write_text("")
        aws = AwsSeed(bed)
        aws.reset()
        aws.eks_cluster("blue")
        env, _ = aws.lambda_env("blue")
        os.environ.update(env, RECHECK_MIN_SECONDS="1")
        api = bed.admin_api_client()
        k8s = KubeScenario(api, prefix="bench-gates")
        (spare,) = k8s.add_nodes(1)
        drain = _Drainer(bed, aws, k8s, spare)
        drain.run("warm-up", "gate off", {})  # cold clients, first token, DescribeCluster cache: not counted
        runs: dict[str, list[GateRun]] = {c: [] for c in CASES}
        for i in range(n):
            for case in CASES[:2]:
                runs[case].append(drain.run(f"{i}", case, {}))
        groups = {
            "instance target": target_group(aws, "bench-instance", delay=delay),
            "ip targets": target_group(aws, "bench-ip", kind="ip", delay=delay),
        }
        for i in range(n):
            for case, tg in groups.items():
                runs[case].append(drain.run(f"{i}", case, {"group": tg, "delay": delay}))
        k8s.cleanup()
        api.close()
        return runs
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if owned:
            bed.stop()


class _Drainer:
    def __init__(self, bed: Any, aws: Any, k8s: Any, spare: str) -> None:
        self.bed, self.aws, self.k8s, self.spare = bed, aws, k8s, spare

    def run(self, label: str, case: str, lb: dict[str, Any]) -> GateRun:
        from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

        from drain_orchestrator.handler import handler
        from drain_orchestrator.workflow import runtime
        from testbed import samples
        from testbed.aws.calls import read_calls
        from testbed.load_balancers import LoadBalancerControllerStandIn, register

        slug = "".join(c for c in f"{case}-{label}" if c.isalnum() or c == "-")
        asg = f"bench-{slug}"
        (iid,) = self.aws.asg(asg, size=1, tags=OWNED)
        (node,) = self.aws.nodes_for(self.k8s, [iid])
        pods = self.k8s.deployment_on(f"app-{slug}", 2, [node], self.spare, grace=0)
        if case == "instance target":
            register(self.aws, lb["group"], [iid])
        elif case == "ip targets":
            register(self.aws, lb["group"], [p.status.pod_ip for p in pods])
        token = self.aws.start_lifecycle_action(asg, "drain", iid)
        event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg=asg, hook="drain", token=token)
        event["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.environ["WAIT_FOR_DEREGISTRATION"] = "never" if case == "gate off" else "lifecycle"
        runtime.reset_config()
        before = len(read_calls(self.bed.dir))
        controller = LoadBalancerControllerStandIn(self.aws, self.k8s, {node: iid}, [lb["group"]] if lb else [])
        with (
            harness.stdout_into(LOG, append=True),
            controller,
            DurableFunctionTestRunner(handler=handler, skip_time=False) as runner,
        ):
            t0 = time.time()
            res = runner.run(input=json.dumps(event), execution_timeout=300)
            ops = [op for op in res.get_all_operations() if str(op.name or "").startswith(LB_OPERATIONS)]
        assert getattr(res.status, "name", "") == "SUCCEEDED", res.error
        (inst,) = json.loads(res.result)["instances"]
        assert inst["result"] == "drained", inst
        (action,) = [a for a in self.aws.lifecycle_actions() if a["instance_id"] == iid]
        calls = Counter(
            c.action.split(":", 1)[1]
            for c in read_calls(self.bed.dir)[before:]
            if c.action.startswith("elasticloadbalancing:")
        )
        lbs = (inst.get("gates") or {}).get("load_balancers") or {}
        assert lbs.get("api_calls", 0) == sum(calls.values()), (lbs, calls)  # the gate's own count agrees
        run = GateRun(case, action["completed_at"] - t0, float(lbs.get("waited_seconds", 0.0)), calls)
        run.operations = len(ops)
        run.step_seconds = sum(
            (op.end_timestamp - op.start_timestamp).total_seconds()
            for op in ops
            if op.start_timestamp and op.end_timestamp and not str(op.name).startswith("gate-wait")
        )
        if lb:
            assert lbs["held"] and not lbs["still_draining"], lbs
            run.past_drained = action["completed_at"] - (max(t for _, _, t in controller.deregistered) + lb["delay"])
        return run


def print_gates(runs: dict[str, list[GateRun]], delay: int) -> None:
    base = statistics.median(r.hook_seconds for r in runs["gate off"])
    print(
        f"| terminate drain, 2 pods (deregistration delay {delay} s) | drains | event → hook completed, median "
        "(min-max) | extra vs gate off, median | in the gate's steps, median | gate waited, median | completed "
        "after the targets drained, median (max) | ELBv2 calls per drain | gate's durable operations per drain |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for case, rs in runs.items():
        hook = [r.hook_seconds for r in rs]
        med = statistics.median(hook)
        extra = "-" if case == "gate off" else f"{med - base:+.2f} s"
        past = [r.past_drained for r in rs if r.past_drained is not None]
        past_s = f"{statistics.median(past):.2f} s ({max(past):.2f} s)" if past else "-"
        total: Counter[str] = Counter()
        for r in rs:
            total.update(r.calls)
        per = ", ".join(f"{a} {c / len(rs):g}" for a, c in sorted(total.items())) or "0"
        steps = statistics.median(r.step_seconds for r in rs) * 1000
        print(
            f"| {case} | {len(rs)} | {med:.2f} s ({min(hook):.2f}-{max(hook):.2f}) | {extra} | {steps:.0f} ms | "
            f"{statistics.median(r.waited_seconds for r in rs):.1f} s | {past_s} | {per} | "
            f"{statistics.mean(r.operations for r in rs):g} |"
        )

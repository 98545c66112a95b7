"""`make demo`: the product end to end on the local test bed.

Starts (or reuses) the bed in .local/cluster, seeds a small account — cluster "blue" (served) with three nodes,
workloads with PodDisruptionBudgets and a DaemonSet, cluster "green" (another team's) with one node, two ASGs with
lifecycle hooks — then replays events/ through the real Lambda handler (durable local runner, waits skipped) and
prints what happened to each event.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests import samples
from tests.testbed.aws_seed import LAUNCHING, TERMINATING, AwsSeed
from tests.testbed.bed import REPO, Testbed
from tests.testbed.kube import KubeScenario

BLUE = {"kubernetes.io/cluster/blue": "owned"}
GREEN = {"kubernetes.io/cluster/green": "owned"}
HOOKS = [
    {"name": "drain", "transition": TERMINATING, "heartbeat_timeout": 300},
    {"name": "join", "transition": LAUNCHING, "heartbeat_timeout": 300},
]


def _say(msg: str) -> None:
    print(msg, flush=True)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def seed(bed: Testbed) -> dict[str, Any]:
    aws = AwsSeed(bed)
    aws.reset()
    aws.eks_cluster("blue")
    aws.eks_cluster("green")
    blue_ids = aws.asg("blue-nodes", size=5, tags=BLUE, hooks=HOOKS)  # 3 to drain, 2 to take the pods
    (green_id,) = aws.asg("green-nodes", size=1, tags=GREEN, hooks=HOOKS[:1])
    with bed.admin_api_client() as api:
        k8s = KubeScenario(api, prefix="demo")
        scenarios = [k8s]
        blue_nodes = aws.nodes_for(k8s, blue_ids)
        aws.nodes_for(k8s, [green_id])
        k8s.deployment("web", 6, nodes=blue_nodes, grace=2)
        k8s.pdb("web", {"app": "web"}, max_unavailable=1)
        k8s.deployment("api", 3, nodes=blue_nodes, grace=1)
        k8s.pdb("api", {"app": "api"}, min_available=2)
        k8s.daemonset("log-agent")
        k8s.wait_pods_ready("app=web", 6)
        k8s.wait_pods_ready("app=api", 3)
        k8s.wait_pdb("web", disruptions_allowed=1)
        k8s.wait_pdb("api", disruptions_allowed=1)
    env, queue = aws.lambda_env("blue")
    return {
        "aws": aws,
        "blue": blue_ids,
        "green": green_id,
        "env": env,
        "queue": queue,
        "ns": k8s.ns,
        "scenarios": scenarios,
    }


def scenario(world: dict[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    """(title, event, action before the event) in replay order."""
    aws: AwsSeed = world["aws"]
    a, b, c = world["blue"][:3]
    g = world["green"]
    unknown = "i-0aaaabbbbccccdddd"

    def lifecycle(name: str, iid: str, asg: str, hook: str) -> dict[str, Any]:
        token = aws.start_lifecycle_action(asg, hook, iid)
        return samples.lifecycle_event(name, instance_id=iid, asg=asg, hook=hook, token=token)

    def scale_out() -> dict[str, Any]:
        asc = aws.client("autoscaling")
        asc.set_desired_capacity(AutoScalingGroupName="blue-nodes", DesiredCapacity=6)
        group = asc.describe_auto_scaling_groups(AutoScalingGroupNames=["blue-nodes"])["AutoScalingGroups"][0]
        new = next(i["InstanceId"] for i in group["Instances"] if i["InstanceId"] not in world["blue"])
        with world["bed"].admin_api_client() as api:  # the new node joins the cluster
            joined = KubeScenario(api, prefix="demo-join")
            aws.nodes_for(joined, [new])
            world["scenarios"].append(joined)
        return lifecycle("asg-launch.json", new, "blue-nodes", "join")

    health = samples.health_event([c, g, unknown])
    health["detail"]["startTime"] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 1830))
    return [
        ("ASG scale-in of a blue node", {}, lambda: lifecycle("asg-terminate.json", a, "blue-nodes", "drain")),
        ("ASG scale-in of another team's node", {}, lambda: lifecycle("asg-terminate.json", g, "green-nodes", "drain")),
        (
            "Spot interruption warning, blue node",
            samples.ec2_event("spot-interruption-terminate.json", instance_id=b),
            None,
        ),
        ("Same warning delivered twice", samples.ec2_event("spot-interruption-terminate.json", instance_id=b), None),
        ("Rebalance recommendation", samples.ec2_event("rebalance-recommendation.json", instance_id=c), None),
        ("Scheduled maintenance in 30 min: blue, green, unknown", health, None),
        (
            "Instance stopping, unknown to EC2",
            samples.ec2_event("state-change-stopping.json", instance_id=unknown),
            None,
        ),
        ("ASG scale-out: wait for the node to join", {}, scale_out),
        ("Unsupported event", samples.load("unsupported-ebs-snapshot.json"), None),
        ("Malformed event", samples.load("malformed-asg-terminate-missing-instance.json"), None),
    ]


def summarize(title: str, status: str, result: dict[str, Any] | None, error: Any, took: float) -> list[str]:
    lines = [f"▶ {title}  [{status}, {took:.1f} s]"]
    if error is not None:
        lines.append(f"    failed: {error.message}  → in AWS this execution ends in the dead-letter queue")
        return lines
    assert result is not None
    if result.get("ignored"):
        lines.append(f"    ignored: {result['ignored']} ({result.get('message', '')})")
        return lines
    for inst in result.get("instances", []):
        rep = inst.get("report") or {}
        parts = [f"{inst['instance_id']} → {inst.get('result', inst.get('action'))}", f"cluster {inst['cluster']}"]
        if inst.get("node"):
            parts.append(f"node {inst['node']}")
        if rep:
            parts.append(f"evicted {rep['evicted']}, blocked {len(rep['blocked'])}, forced {len(rep['forced'])}")
        if inst.get("lifecycle"):
            lc = inst["lifecycle"]
            parts.append(f"hook {lc.get('result', '')} {lc['outcome']}".strip())
        lines.append("    " + "; ".join(parts))
    for d in result.get("not_acted_on", []):
        lines.append(
            f"    {d['instance_id']} → not acted on: {d['reason']}" + (f" ({d['cluster']})" if d["cluster"] else "")
        )
    return lines


def replay(bed: Testbed, log_path: Path, *, cleanup: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Seed the account, replay the scenario through the handler; returns (outcomes, notifications). The Lambda's
    own output (JSON logs, EMF lines) goes to ``log_path``; the environment is restored afterwards; ``cleanup``
    removes the demo's namespaces and nodes (the demo itself leaves them for a look with kubectl)."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    world = seed(bed)
    world["bed"] = bed
    saved_env = {k: os.environ.get(k) for k in [*world["env"], "RECHECK_MIN_SECONDS"]}
    os.environ.update(world["env"])
    os.environ["RECHECK_MIN_SECONDS"] = "1"
    from drain_orchestrator.handler import handler
    from drain_orchestrator.workflow import runtime

    log_path.write_text("")
    outcomes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    try:
        for title, event, make in scenario(world):
            ev = make() if make else copy.deepcopy(event)
            if "time" in ev and "malformed" not in title.lower():
                ev["time"] = _now()
            runtime.reset_config()
            started = time.monotonic()
            sys.stdout.flush()
            sys.stderr.flush()
            saved = os.dup(1), os.dup(2)
            with open(log_path, "a") as log:
                os.dup2(log.fileno(), 1)
                os.dup2(log.fileno(), 2)
                try:
                    with DurableFunctionTestRunner(handler=handler) as runner:
                        res = runner.run(input=json.dumps(ev), execution_timeout=300)
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os.dup2(saved[0], 1)
                    os.dup2(saved[1], 2)
                    os.close(saved[0])
                    os.close(saved[1])
            outcome = {
                "title": title,
                "status": getattr(res.status, "name", str(res.status)),
                "result": json.loads(res.result) if res.result else None,
                "error": res.error,
                "seconds": time.monotonic() - started,
            }
            outcomes.append(outcome)
            for line in summarize(title, outcome["status"], outcome["result"], res.error, outcome["seconds"]):
                _say(line)
        notes = world["aws"].drain_notifications(world["queue"])
    finally:
        if cleanup:
            with bed.admin_api_client() as api:
                from kubernetes import client as k8s_client

                for sc in world["scenarios"]:
                    sc.core = k8s_client.CoreV1Api(api)
                    sc.cleanup()
        runtime.reset_config()
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return outcomes, notes


def main() -> int:
    state_dir = REPO / ".local" / "cluster"
    bed = Testbed.attach(state_dir)
    if bed is None:
        _say("starting the local test bed (control plane + AWS emulator)…")
        bed = Testbed.start(state_dir, log=lambda m: None)
    _say(f"test bed: {bed.server}  (kubectl --kubeconfig {bed.kubeconfig.relative_to(REPO)})")
    _say("seeding: cluster blue (5 nodes, web x6 + api x3 with PDBs, a DaemonSet), cluster green (1 node), 2 ASGs")
    log_path = REPO / ".local" / "demo.log"
    _say("replaying events through drain_orchestrator.handler.handler")
    _say(f"(the Lambda's JSON logs and EMF metric lines: {log_path.relative_to(REPO)})")
    _say("")
    total_start = time.monotonic()
    _, notes = replay(bed, log_path)
    _say("")
    _say(f"notifications published: {len(notes)} — " + ", ".join(f"{n['phase']} {n['node']}" for n in notes))
    _say(
        f"done in {time.monotonic() - total_start:.1f} s. Inspect: kubectl --kubeconfig "
        f"{bed.kubeconfig.relative_to(REPO)} get nodes; stop with `make cluster-down`."
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())

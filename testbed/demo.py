"""`make demo`: the product end to end on the local test bed.

Starts (or reuses) the bed in .local/cluster, seeds a small account — cluster "blue" (served) with five nodes,
workloads with PodDisruptionBudgets and a DaemonSet, cluster "green" (another team's) with one node, two ASGs with
lifecycle hooks, an instance-mode target group of the AWS Load Balancer Controller's for blue — then replays events/
through the real Lambda handler (durable local runner, waits skipped except for the scale-in behind the load
balancer, which waits for the target to drain in real time) and prints what happened to each event.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from testbed import samples
from testbed.aws_seed import LAUNCHING, TERMINATING, AwsSeed
from testbed.bed import REPO, Testbed
from testbed.kube import KubeScenario
from testbed.load_balancers import LoadBalancerControllerStandIn, register, target_group
from testbed.local_env import ENV_HINT, prepare_walkthrough

BLUE = {"kubernetes.io/cluster/blue": "owned"}
GREEN = {"kubernetes.io/cluster/green": "owned"}
HOOKS = [
    {"name": "drain", "transition": TERMINATING, "heartbeat_timeout": 300},
    {"name": "join", "transition": LAUNCHING, "heartbeat_timeout": 300},
]
TARGET_GROUP = "tg-web"
# Long enough to outlast the scale-in's drain (the controller deregisters the instance at the cordon, so the
# draining runs alongside the evictions), short enough for the demo: the gate then holds the hook for the rest.
DEREGISTRATION_DELAY = 10
BEHIND_LB = "ASG scale-in of a blue node behind a load balancer"


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
    # a Service's instance-mode target group, as the controller creates it (tagged for the cluster): the first node
    # (the scale-in) and the spare node of the README's walk-through are its targets
    tg = target_group(aws, TARGET_GROUP, cluster="blue", delay=DEREGISTRATION_DELAY)
    behind_lb = {blue_nodes[0]: blue_ids[0], blue_nodes[4]: blue_ids[4]}
    register(aws, tg, list(behind_lb.values()))
    env, queue = aws.lambda_env("blue")
    return {
        "aws": aws,
        "blue": blue_ids,
        "green": green_id,
        "env": env,
        "queue": queue,
        "ns": k8s.ns,
        "scenarios": scenarios,
        "load_balancer": (tg, behind_lb),
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

    health = samples.health_event([c, g, unknown], start=time.time() + 1830)
    reclaimed = samples.ec2_event("capacity-reservation-interruption.json", instance_id=g)
    reclaimed["detail"]["instance-termination-time"] = time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 120)
    )
    return [
        (BEHIND_LB, {}, lambda: lifecycle("asg-terminate.json", a, "blue-nodes", "drain")),
        ("ASG scale-in of another team's node", {}, lambda: lifecycle("asg-terminate.json", g, "green-nodes", "drain")),
        (
            "Spot interruption warning, blue node",
            samples.ec2_event("spot-interruption-terminate.json", instance_id=b),
            None,
        ),
        ("Same warning delivered twice", samples.ec2_event("spot-interruption-terminate.json", instance_id=b), None),
        ("Capacity reservation reclaimed, another team's node", reclaimed, None),
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
        lines.extend(gate_lines(inst.get("gates") or {}))
    for d in result.get("not_acted_on", []):
        lines.append(
            f"    {d['instance_id']} → not acted on: {d['reason']}" + (f" ({d['cluster']})" if d["cluster"] else "")
        )
    return lines


def gate_lines(gates: dict[str, Any]) -> list[str]:
    """What the gates held the lifecycle action for, e.g. "load-balancer gate: held the hook 6.1 s until ..."."""
    lines = []
    lbs = gates.get("load_balancers") or {}
    if lbs.get("held") or lbs.get("still_draining"):
        lines.append(
            f"    load-balancer gate: held the hook {lbs['waited_seconds']:.1f} s until "
            + (
                f"{', '.join(lbs['held'])} finished draining"
                if not lbs["still_draining"]
                else f"the deadline; still draining: {', '.join(lbs['still_draining'])}"
            )
            + f" ({lbs['api_calls']} ELBv2 calls)"
        )
    vols = gates.get("volumes") or {}
    if vols.get("held"):
        lines.append(f"    volume gate: held the hook {vols['waited_seconds']:.1f} s for {', '.join(vols['held'])}")
    return lines


def _load_balancer_controller(bed: Testbed, world: dict[str, Any], stack: contextlib.ExitStack) -> None:
    """The AWS Load Balancer Controller's part, for the replay: deregister a node's instance once it is excluded."""
    from kubernetes import client as k8s_client

    tg, nodes = world["load_balancer"]
    api = stack.enter_context(bed.admin_api_client())
    k8s: KubeScenario = world["scenarios"][0]
    k8s.core = k8s_client.CoreV1Api(api)
    stack.enter_context(LoadBalancerControllerStandIn(world["aws"], k8s, nodes, [tg]))


def replay(
    bed: Testbed, log_path: Path, *, cleanup: bool = False, world: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Seed the account (unless ``world`` is an account already seeded), replay the scenario through the handler;
    returns (outcomes, notifications). The Lambda's own output (JSON logs, EMF lines) goes to ``log_path``; the
    environment is restored afterwards; ``cleanup`` removes the demo's namespaces and nodes (the demo itself leaves
    them for a look with kubectl)."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    world = world if world is not None else seed(bed)
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
        with contextlib.ExitStack() as controller:
            _load_balancer_controller(bed, world, controller)
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
                        # the scale-in behind the load balancer waits in real time: the target drains in real time
                        with DurableFunctionTestRunner(handler=handler, skip_time=title != BEHIND_LB) as runner:
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
    _say("seeding: cluster blue (5 nodes, web x6 + api x3 with PDBs, a DaemonSet), cluster green (1 node), 2 ASGs,")
    _say(
        f"         target group {TARGET_GROUP} (instance mode, {DEREGISTRATION_DELAY} s deregistration delay): "
        "2 blue nodes, with a load balancer controller stand-in"
    )
    log_path = REPO / ".local" / "demo.log"
    _say("replaying events through drain_orchestrator.handler.handler")
    _say(f"(the Lambda's JSON logs and EMF metric lines: {log_path.relative_to(REPO)})")
    _say("")
    total_start = time.monotonic()
    world = seed(bed)
    _, notes = replay(bed, log_path, world=world)
    walkthrough = prepare_walkthrough(bed, world["blue"])
    _say("")
    _say(f"notifications published: {len(notes)} — " + ", ".join(f"{n['phase']} {n['node']}" for n in notes))
    _say(
        f"done in {time.monotonic() - total_start:.1f} s. Inspect: kubectl --kubeconfig "
        f"{bed.kubeconfig.relative_to(REPO)} get nodes; stop with `make cluster-down`."
    )
    _say(f"events about a blue node still in service, for the README's walk-through: {walkthrough.relative_to(REPO)}")
    _say(ENV_HINT)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())

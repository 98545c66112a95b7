"""`drain-orchestrator history` as an operator runs it: the function as Lambda runs it (testbed/runtime.py) drains
a node held by a PodDisruptionBudget, and the command reads the drain's timeline from the durable-execution
service's own API (ListDurableExecutionsByFunction, GetDurableExecutionHistory over HTTP): while the drain is held,
and after, by instance id and by node name; an execution about another instance is told apart."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from testbed.runtime import FUNCTION_NAME, LambdaRuntime
from tests.integration.cli_support import run_cli

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}
HOOK = {"name": "drain", "transition": "autoscaling:EC2_INSTANCE_TERMINATING", "heartbeat_timeout": 300}


def _history(runtime: LambdaRuntime, *args: str) -> Any:
    return run_cli("history", *args, "--function", FUNCTION_NAME, env={"AWS_ENDPOINT_URL_LAMBDA": runtime.service})


def _doc(runtime: LambdaRuntime, *args: str) -> dict[str, Any]:
    done = _history(runtime, *args, "--json")
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)  # stdout is the document alone
    return doc


def _steps(timeline: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in timeline["steps"] if s["name"] != "execution"}


def _event(iid: str, token: str) -> dict[str, Any]:
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    return {**event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def test_history_shows_each_step_of_a_held_drain_with_its_reason(
    aws: AwsSeed, k8s: KubeScenario, real_lambda: Callable[..., LambdaRuntime]
) -> None:
    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED, hooks=[HOOK])
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on("web", 2, [node], spare, grace=1)
    k8s.pdb("web", {"app": "web"}, max_unavailable=0)
    k8s.wait_pdb("web", disruptions_allowed=0)
    other = aws.instance(tags={"kubernetes.io/cluster/green": "owned"})  # another cluster's: not acted on
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    runtime = real_lambda(DRAIN_PASS_SECONDS="5", RECHECK_MIN_SECONDS="2", DEADLINE_ASG_TERMINATE_SECONDS="3600")
    elsewhere = runtime.start_execution(samples.ec2_event("spot-interruption-terminate.json", instance_id=other), "x")
    assert runtime.wait(elsewhere, timeout=120).status == "SUCCEEDED"
    arn = runtime.start_execution(_event(iid, token), "held-drain")

    # while the budget holds the drain: the execution runs, its passes say which budget holds which pods
    k8s.wait_for(
        lambda: any(e["EventType"] == "WaitStarted" for e in runtime.history(arn)), timeout=120, what="a held pass"
    )
    held = _doc(runtime, iid)
    (timeline,) = held["executions"]
    assert timeline["execution"]["status"] == "RUNNING" and timeline["verdict"] == "RUNNING"
    first = _steps(timeline)["drain-pass-0"]
    assert first["outcome"] == "held" and "0 evicted, 2 blocked by PDB web" in first["detail"], first
    assert first["data"]["report"]["blocked"][0]["pdbs"] == ["web"]  # the checkpointed result, whole

    k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})
    assert runtime.wait(arn, timeout=180).status == "SUCCEEDED"

    doc = _doc(runtime, iid)
    (timeline,) = doc["executions"]  # the newest about it; the other execution is not
    assert doc["executions_read"] == 2
    assert (timeline["instance_id"], timeline["node"], timeline["kind"]) == (iid, node, "asg-terminate")
    assert timeline["verdict"] == "drained" and timeline["execution"]["status"] == "SUCCEEDED"
    steps = timeline["steps"]
    names = [s["name"] for s in steps]
    order = ["admit", "begin", "drain-pass-0", "recheck-0"]
    assert names[0] == names[-1] == "execution" and [n for n in names if n in order] == order, names
    assert names.index("drain-pass-0") < names.index("verdict") == len(names) - 2, names
    by_name = _steps(timeline)
    admit = by_name["admit"]  # settings, parse and decide in one step: the decision, and the run id
    assert admit["outcome"] == "drain" and "owned-instance-tag" in admit["detail"] and "run id " in admit["detail"]
    begun = by_name["begin"]  # the clock, locate, cordon and announcement in one step
    assert begun["outcome"] == "cordoned", begun
    assert begun["detail"].startswith(f"node {node}, drains the node, deadline "), begun
    verdict = by_name["verdict"]  # the lifecycle action's completion, the surges' restore and the report in one step
    assert verdict["outcome"] == "notified", verdict
    assert verdict["detail"].startswith("lifecycle action completed CONTINUE, drain took "), verdict
    passes = [s for s in steps if s["name"].startswith("drain-pass-")]
    # the budget lets the pods go one at a time: one pass or two evict them (a pass that ran out of its 5 s while a
    # replacement became Ready leaves the second to the next), and the last finds the node drained
    assert passes[-1]["outcome"] == "drained", passes[-1]
    evicted = [p for s in passes for p in s["data"]["report"]["evicted"]]
    assert sorted(evicted) == sorted(set(evicted)) and len(evicted) == 2, [s["detail"] for s in passes]
    assert by_name["recheck-0"]["type"] == "wait" and by_name["recheck-0"]["seconds"] >= 1.5
    times = [s["at"] for s in steps]
    assert times == sorted(times) and steps[-1]["detail"].startswith("lifecycle action CONTINUE")

    # by node name, as a table
    table = _history(runtime, node)
    assert table.returncode == 0, table.stderr
    title, subtitle, header, *rows = table.stdout.splitlines()
    assert title == f"asg-terminate for {iid} (node {node}): drained"
    assert subtitle.startswith("execution held-drain on version $LATEST, SUCCEEDED, started ")
    assert header.split() == ["TIME", "(UTC)", "+S", "STEP", "RESULT", "TOOK", "DETAIL"]
    (line,) = [r.split() for r in rows if " verdict " in r]
    assert (line[2], line[3], line[5:9]) == ("verdict", "notified", ["lifecycle", "action", "completed", "CONTINUE,"])
    assert rows[-1].split()[2:4] == ["execution", "drained"]

    # the other instance: decided, not acted on, and why; no node was looked for
    (skipped,) = _doc(runtime, other)["executions"]
    assert (skipped["instance_id"], skipped["node"], skipped["kind"]) == (other, None, "spot-interruption")
    assert skipped["verdict"] == "not acted on"
    admitted = _steps(skipped)["admit"]
    assert admitted["outcome"] == "not acted on", admitted
    assert admitted["detail"].startswith("other-cluster (action skip), run id "), admitted
    assert skipped["steps"][-1]["detail"] == "other-cluster (cluster green)"
    assert not {"begin", "locate"} & set(_steps(skipped))

    unknown = _history(runtime, "i-00000000000000000")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert f"no execution of {FUNCTION_NAME} started since " in unknown.stderr
    assert "(2 read) names instance i-00000000000000000" in unknown.stderr

"""Durability and convergence of the Lambda workflow on the real bed: a crash mid-drain resumes without repeating
finished steps; duplicate and overlapping events give one drain, one notification per phase and one lifecycle
completion; heartbeats keep a long drain's hook alive; a failed drain completes the hook with the configured result;
several instances of one Health event drain concurrently; the EKS token never reaches a log line."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import (
    OWNED,
    assert_completed_by_function,
    blue_asg_node,
    final_notification,
    pods_on,
    relax_pdb_after,
    spread,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "crash_at",
    [
        # inside the begin step, after it cordoned and took the phase claims, before its announcement: the step runs
        # again (its clock, its look, its cordon) and announces once
        "after-cordon",
        "pass-0",  # at the start of the first drain pass, after the cordon and its announcement were checkpointed
    ],
)
def test_crash_mid_drain_resumes_without_repeating_finished_steps(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, crash_at: str
) -> None:
    from drain_orchestrator.workflow import runtime

    iid, node, spare = blue_asg_node(aws, k8s)
    pods = spread(k8s, node, spare)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue")
    crashed = threading.Event()
    release = threading.Event()

    def fault(point: str) -> None:
        # The first invocation "dies" at crash_at: it never returns, as a Lambda killed by its timeout; the
        # runner re-invokes after the invocation timeout.
        if point == crash_at and not crashed.is_set():
            crashed.set()
            release.wait(120)
            raise SystemExit("the killed invocation's thread, released after the test")

    runtime.fault_injection = fault
    try:
        run = lam.run(
            samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token),
            invocation_timeout=5,
        )
    finally:
        release.set()
    assert crashed.is_set()
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "drained"
    assert not pods_on(k8s, node)
    # finished steps were not repeated by the resumed invocation: one cordon, one "started", one completion
    assert run.metric_total("NodesCordoned") == 1
    assert run.metric_total("PodsEvicted") == len(pods)
    # the verdict: completed by the function (not a timeout), one final notification naming the result
    assert_completed_by_function(aws, iid, "CONTINUE")
    notes = final_notification(lam, "completed", "drained")
    assert sorted(n["phase"] for n in notes) == ["completed", "started"]
    assert run.metric_total("LifecycleActionsCompleted") == 1
    events = k8s.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node},source=drain-orchestrator"
    ).items
    reasons = [e.reason for e in events]
    # drained by its first pass (run again after the crash): the verdict's Event alone tells the drain, once
    assert reasons == ["DrainCompleted"], reasons


def test_same_event_twice_gives_one_drain_and_one_notification_of_each_kind(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    pods = spread(k8s, node, spare)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue")
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    first = lam.run(event)
    second = lam.run(event)
    assert first.status == second.status == "SUCCEEDED"
    assert first.metric_total("PodsEvicted") == len(pods) and second.metric_total("PodsEvicted") == 0
    assert first.result["instances"][0]["lifecycle"]["outcome"] == "completed"
    # the second delivery finds the action answered (DescribeAutoScalingInstances): nothing to act on
    assert second.result["instances"] == []
    assert second.result["not_acted_on"][0]["reason"] == "action-not-pending"
    assert first.metric_total("LifecycleActionsCompleted") + second.metric_total("LifecycleActionsCompleted") == 1
    assert sorted(n["phase"] for n in lam.notifications()) == ["completed", "started"]


def test_spot_warning_state_change_and_hook_for_one_instance_converge(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    pods = spread(k8s, node, spare, replicas=6)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    aws.stop_instance(iid)  # what the state change says: EC2 bears it out
    lam.configure("blue")
    lam.collect()
    events = [
        samples.ec2_event("spot-interruption-terminate.json", instance_id=iid),
        samples.ec2_event("state-change-stopping.json", instance_id=iid),
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token),
    ]
    runs: list[Any] = [None] * len(events)

    def go(i: int) -> None:
        runs[i] = lam.run_in_thread(events[i], skip_time=False)  # the waiting executions poll in real time

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(events))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert all(r is not None and r.status == "SUCCEEDED" for r in runs), [r and r.error for r in runs]
    assert not pods_on(k8s, node)
    printed = lam.collect()
    # one cordon, one drain, counted once: only the execution holding the node's drain claim counts its pods
    # (it may miss pods another execution evicted first, never count one twice), only the holder of the
    # "drain-completed" claim counts the node
    assert 0 < printed.metric_total("PodsEvicted") <= len(pods)
    assert printed.metric_total("NodesCordoned") == 1
    assert printed.metric_total("NodesDrained") == 1  # counted by the execution holding the completion claim
    assert printed.metric_total("LifecycleActionsCompleted") == 1
    assert sorted(n["phase"] for n in lam.notifications()) == ["completed", "started"]
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE"


def test_heartbeats_keep_the_hook_alive_while_a_pdb_holds_the_drain(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s, heartbeat_timeout=30)
    spread(k8s, node, spare, replicas=2)
    k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 0}})
    k8s.wait_pdb("web", disruptions_allowed=0)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue", DRAIN_PASS_SECONDS="5")
    relaxed = relax_pdb_after(k8s, "web", 22)  # longer than the hook's heartbeat interval
    run = lam.run(
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    )
    relaxed.outcome()
    assert run.status == "SUCCEEDED", run.error
    assert run.result["instances"][0]["result"] == "drained"
    (action,) = aws.lifecycle_actions()
    assert action["heartbeats"] >= 1
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE"
    assert run.metric_total("EvictionsBlockedByPDB") >= 1


def test_failed_drain_completes_the_hook_with_the_configured_result(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 0}})
    k8s.wait_pdb("web", disruptions_allowed=0)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure(
        "blue",
        DEADLINE_ASG_TERMINATE_SECONDS="8",
        FORCE_DELETE_ON_DEADLINE="false",
        LIFECYCLE_RESULT_ON_FAILURE="ABANDON",
    )
    run = lam.run(
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    )
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "deadline-missed"
    assert inst["report"]["blocked_by"] == ["web"]
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "ABANDON"
    assert run.metric_total("DrainDeadlineMissed", cluster="blue", kind="asg-terminate") == 1
    assert sorted(n["phase"] for n in lam.notifications()) == ["failed", "started"]
    assert pods_on(k8s, node)  # nothing forced: the budget was honoured


def test_health_event_drains_its_owned_instances_and_explains_the_others(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    blue = [aws.instance(tags=OWNED) for _ in range(2)]
    green = aws.instance(tags={"kubernetes.io/cluster/green": "owned"})
    nodes = aws.nodes_for(k8s, blue)
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on("web", 4, nodes, spare, grace=1)
    lam.configure("blue", MAX_CONCURRENT_NODES="2")
    # 30 s past the default 1800 s lead: on a loaded machine the steps before the wait take seconds, and a window
    # already inside the lead would rightly start the drain at once (the runner skips the wait's time anyway)
    event = samples.health_event([*blue, green, "i-0aaaabbbbccccdddd"], start=time.time() + 1830)
    run = lam.run(event)
    assert run.status == "SUCCEEDED", run.error
    assert sorted(i["node"] for i in run.result["instances"]) == sorted(nodes)
    assert all(i["result"] == "drained" for i in run.result["instances"])
    assert {d["reason"] for d in run.result["not_acted_on"]} == {"other-cluster", "unknown-instance"}
    for node in nodes:
        assert not pods_on(k8s, node)
    # the drain waited (durably) until the window start minus the lead time
    waits = [op for op in run.operations if getattr(op, "name", "") == "until-window"]
    assert len(waits) == 2


def test_eks_token_never_appears_in_logs(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from drain_orchestrator.aws import eks_auth

    issued: list[str] = []
    real = eks_auth.generate_token

    def spy(cluster: str, sts: Any) -> str:  # records the real token; changes nothing
        token = real(cluster, sts)
        issued.append(token)
        return token

    monkeypatch.setattr(eks_auth, "generate_token", spy)
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue", POWERTOOLS_LOG_LEVEL="DEBUG")
    root = logging.getLogger()
    handler = logging.StreamHandler()  # stderr: every library's DEBUG lines (botocore, urllib3, kubernetes)
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.DEBUG)
    try:
        run = lam.run(
            samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
        )
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    assert run.status == "SUCCEEDED", run.error
    assert issued, "the run should have minted an EKS token"
    logs = run.stdout + run.stderr
    assert len(logs) > 10_000, "DEBUG logging should have produced plenty of output"
    for t in issued:
        body = t.removeprefix("k8s-aws-v1.")
        assert t not in logs and body[:40] not in logs

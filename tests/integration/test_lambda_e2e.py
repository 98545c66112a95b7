"""The Lambda end to end for every event kind: durable local runner + moto server + the real control plane."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from testbed import samples
from testbed.aws_seed import LAUNCHING, AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def _node_pods(k8s: KubeScenario, node: str) -> list[Any]:
    return [
        p
        for p in k8s.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
        if p.metadata.deletion_timestamp is None
    ]


def _workload(k8s: KubeScenario, node: str, spare: str, *, replicas: int = 3, pdb: bool = True) -> None:
    """A Deployment spread over ``node`` and ``spare`` with a PDB, so the drain has to respect the budget."""
    k8s.deployment("web", replicas, nodes=[node, spare], grace=1)
    k8s.wait_pods_ready("app=web", replicas)
    if pdb:
        k8s.pdb("web", {"app": "web"}, max_unavailable=1)
        k8s.wait_pdb("web", disruptions_allowed=1)


def _seed_asg(aws: AwsSeed, k8s: KubeScenario, size: int = 1, **kw: Any) -> tuple[list[str], list[str]]:
    ids = aws.asg("ng-blue", size=size, tags=OWNED, **kw)
    return ids, aws.nodes_for(k8s, ids)


def test_asg_terminate_drains_heartbeats_and_completes_continue(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    (iid,), (node,) = _seed_asg(aws, k8s)
    (spare,) = k8s.add_nodes(1)
    _workload(k8s, node, spare)
    on_node = {p.metadata.name for p in _node_pods(k8s, node)}
    assert on_node, "fixture: some pods should run on the node being drained"
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue")
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)

    run = lam.run(event)

    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "drained" and inst["node"] == node
    assert inst["lifecycle"]["outcome"] == "completed"
    n = k8s.core.read_node(node)
    assert n.spec.unschedulable is True
    assert n.metadata.annotations["drain-orchestrator.io/reason"] == "asg-terminate"
    assert n.metadata.annotations["drain-orchestrator.io/event-id"] == event["id"]
    assert not [p for p in _node_pods(k8s, node) if p.metadata.namespace == k8s.ns]
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE" and action["completed_with"] == "token"
    assert action["completed_by"] == aws.role_arn("drain-orchestrator")  # by the function, not by a timeout
    phases = sorted(m["phase"] for m in lam.notifications())
    assert phases == ["completed", "started"]
    assert run.metric_total("NodesDrained", cluster="blue", kind="asg-terminate") == 1
    assert run.metric_total("PodsEvicted", cluster="blue") == len(on_node)
    assert run.metric_total("LifecycleActionsCompleted", cluster="blue") == 1
    assert run.metric_total("EventsReceived", kind="asg-terminate") == 1
    for m in run.emf():
        assert m["namespace"] == "DrainOrchestrator"
        assert "node" not in m["dims"] and node not in m["dims"].values()  # low cardinality
    logs = [json.loads(line) for line in run.stdout.splitlines() if line.startswith('{"level"')]
    cordoned = next(entry for entry in logs if entry["message"] == "node cordoned")
    assert cordoned["correlation_id"] == event["id"]
    assert (cordoned["instance_id"], cordoned["cluster"], cordoned["node"], cordoned["kind"]) == (
        iid,
        "blue",
        node,
        "asg-terminate",
    )
    events = k8s.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node},source=drain-orchestrator"
    ).items
    # drained by its first pass: one Event tells the whole drain, its kind and event included
    assert [e.reason for e in events] == ["DrainCompleted"], [e.reason for e in events]
    assert f"for asg-terminate (event {event['id']})" in events[0].message, events[0].message


def test_event_for_another_clusters_instance_leaves_its_hook_alone(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-green", size=1, tags={"kubernetes.io/cluster/green": "owned"})
    (node,) = aws.nodes_for(k8s, [iid])
    token = aws.start_lifecycle_action("ng-green", "drain", iid)
    lam.configure("blue")
    run = lam.run(
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-green", hook="drain", token=token)
    )
    assert run.status == "SUCCEEDED", run.error
    assert run.result["instances"] == []
    assert run.result["not_acted_on"][0]["reason"] == "other-cluster"
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "ACTIVE"  # left to its owner
    assert not k8s.core.read_node(node).spec.unschedulable
    assert run.metric_total("EventsIgnored", reason="other-cluster") == 1
    assert run.metric_total("Errors") == 0


def test_spot_interruption_drains_with_grace_clipped_to_the_two_minute_window(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    # a pod asking for 10 minutes of grace: the warning leaves two (here 20 s); its replacement may go to spare
    k8s.deployment_on("slow", 1, [node], spare, grace=600)
    (pod,) = _node_pods(k8s, node)
    lam.configure("blue")
    event = samples.ec2_event("spot-interruption-terminate.json", instance_id=iid)
    event["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 100))  # 20 s left
    started = time.time()
    run = lam.run(event, now=False)
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    # evicted with its own grace in the drain's respectful first MIN_DRAIN_SECONDS (the harness's 10 s), then, the
    # deadline policy on, its grace shortened so that it ends before the instance does
    deadline = started + 20
    assert time.time() < deadline + 15
    assert inst["result"] in ("drained", "deadline-missed")
    try:
        gone = k8s.core.read_namespaced_pod(pod.metadata.name, k8s.ns)
        assert gone.metadata.deletion_timestamp is not None
        assert gone.metadata.deletion_grace_period_seconds <= 20
    except ApiException as e:
        assert e.status == 404


def test_rebalance_cordons_only_by_default(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    k8s.deployment("web", 1, nodes=[node])
    k8s.wait_pods_ready("app=web", 1)
    # no return to service (tests/integration/test_return_to_service.py): the cordon alone is under test
    lam.configure("blue", REBALANCE_RETURN_SECONDS="0")
    run = lam.run(samples.ec2_event("rebalance-recommendation.json", instance_id=iid))
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "cordoned"
    assert k8s.core.read_node(node).spec.unschedulable is True
    assert len(_node_pods(k8s, node)) >= 1  # nothing evicted
    assert lam.notifications() == []
    events = k8s.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node},source=drain-orchestrator"
    ).items
    assert [e.reason for e in events] == ["NodeCordoned"]  # a cordon only says so, and nothing of a drain


def test_asg_launch_waits_for_ready_node_then_continues(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    ids = aws.asg(
        "ng-blue", size=1, tags=OWNED, hooks=[{"name": "launch", "transition": LAUNCHING, "heartbeat_timeout": 300}]
    )
    (iid,) = ids
    token = aws.start_lifecycle_action("ng-blue", "launch", iid)
    lam.configure("blue", LAUNCH_READY_TIMEOUT_SECONDS="60")
    inst = aws.describe(iid)

    import threading

    def join_later() -> None:
        time.sleep(3)  # the node registers a little after the launch event
        aws.nodes_for(k8s, [iid])

    t = threading.Thread(target=join_later)
    t.start()
    run = lam.run(
        samples.lifecycle_event("asg-launch.json", instance_id=iid, asg="ng-blue", hook="launch", token=token),
        skip_time=False,
    )
    t.join()
    assert run.status == "SUCCEEDED", run.error
    (res,) = run.result["instances"]
    assert res["result"] == "ready" and res["node"] == inst["PrivateDnsName"]
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE"


def test_malformed_event_fails_the_execution_with_the_field(testbed: Testbed, aws: AwsSeed, lam: LambdaHarness) -> None:
    lam.configure("blue")
    run = lam.run(samples.load("malformed-asg-terminate-missing-instance.json"))
    assert run.status == "FAILED"
    assert "detail.EC2InstanceId" in str(run.error)
    assert run.metric_total("Errors", reason="malformed-event") == 1


def test_bad_setting_fails_with_the_variables_name(
    testbed: Testbed, aws: AwsSeed, lam: LambdaHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    lam.configure("blue")
    monkeypatch.setenv("ACTION_REBALANCE", "explode")
    run = lam.run(samples.load("rebalance-recommendation.json"))
    assert run.status == "FAILED"
    assert "ACTION_REBALANCE" in str(run.error)
    assert run.metric_total("Errors", reason="settings") == 1


def test_state_change_stopping_drains_within_its_short_deadline(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on("web", 2, [node], spare, grace=1)
    lam.configure("blue")
    aws.stop_instance(iid)
    started = time.time()
    run = lam.run(samples.ec2_event("state-change-stopping.json", instance_id=iid))
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "drained" and inst["node"] == node
    assert time.time() - started < 60  # DEADLINE_STATE_CHANGE_SECONDS
    assert not [p for p in _node_pods(k8s, node) if p.metadata.namespace == k8s.ns]
    assert run.metric_total("NodesDrained", cluster="blue", kind="state-change") == 1


def test_state_change_to_running_is_ignored_with_its_reason(testbed: Testbed, aws: AwsSeed, lam: LambdaHarness) -> None:
    lam.configure("blue")
    run = lam.run(samples.load("state-change-running-ignored.json"))
    assert run.status == "SUCCEEDED", run.error
    assert run.result["ignored"] == "state-not-draining"
    assert run.metric_total("EventsIgnored", reason="state-not-draining") == 1


def test_cluster_without_access_fails_with_a_clear_error_and_a_metric(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    lam.configure("blue", DEADLINE_STATE_CHANGE_SECONDS="12")
    testbed.clear_access_entries()  # the cluster never got the function's access entry
    testbed.register_cluster("blue")
    aws.stop_instance(iid)
    started = time.time()
    run = lam.run(samples.ec2_event("state-change-stopping.json", instance_id=iid), skip_time=False)
    # retried (an operator may add the entry) until the deadline, then the verdict, then a failed execution
    assert run.status == "FAILED"  # -> the dead-letter queue, with the original event
    assert "unauthorized" in str(run.error) and "401" in str(run.error)
    assert 10 <= time.time() - started < 60
    assert run.metric_total("Errors", reason="locate-failed") >= 2
    assert run.metric_total("Errors", reason="drain-failed") == 1
    assert not k8s.core.read_node(node).spec.unschedulable

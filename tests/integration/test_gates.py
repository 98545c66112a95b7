"""The gates between a drain and its verdict, end to end: the Lambda holds the lifecycle action until the instance's
load-balancer targets have finished draining and the node's volumes are detached, or until the deadline.

Target groups drain for their deregistration delay in the AWS emulator (testbed/aws/elbv2.py); a stand-in
for the AWS Load Balancer Controller deregisters the targets as the real one does. These runs use real durable waits
(``skip_time=False``), so what is measured is time that really passed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from testbed.load_balancers import (
    LoadBalancerControllerStandIn,
    elbv2_calls,
    register,
    target_group,
    target_states,
)
from tests.integration.audit_support import audit_offset, by_verb_and_resource, function_requests
from tests.integration.gates_support import VolumeAttachments, bound_claim, claim_volume, delete_volumes
from tests.integration.lambda_support import LambdaHarness, Run

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}


@pytest.fixture
def volumes(k8s: KubeScenario) -> Iterator[VolumeAttachments]:
    va = VolumeAttachments(k8s)
    yield va
    va.cleanup()


def _instance_with_pods(aws: AwsSeed, k8s: KubeScenario, app: str = "web", replicas: int = 2) -> tuple[str, str]:
    """An ASG instance, its node running ``replicas`` pods that may move to a spare node, a terminate hook."""
    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on(app, replicas, [node], spare, grace=0)
    return iid, node


def _terminate(aws: AwsSeed, lam: LambdaHarness, iid: str, **env: str) -> Run:
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue", **env)
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    return lam.run(event, skip_time=False)


def _only(run: Run) -> dict[str, Any]:
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]  # type: ignore[index]
    return inst  # type: ignore[no-any-return]


def _node_events(k8s: KubeScenario, node: str) -> dict[str, str]:
    items = k8s.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node},source=drain-orchestrator"
    ).items
    return {e.reason: e.message for e in items}


def test_hook_is_held_until_the_instance_target_has_finished_draining(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node = _instance_with_pods(aws, k8s)
    # a 12 s delay: longer than the drain itself and its late look (to 5 s after the cordon), so the gate holds
    tg = target_group(aws, "tg-web", delay=12)
    register(aws, tg, [iid])
    with LoadBalancerControllerStandIn(aws, k8s, {node: iid}, [tg]) as controller:
        run = _terminate(aws, lam, iid)
        returned = time.time()
    inst = _only(run)
    assert inst["result"] == "drained" and inst["lifecycle"]["outcome"] == "completed"
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE"
    # deregistered by the controller on the exclusion label, then draining 12 s: the hook waited for all of it
    ((_, target, deregistered_at),) = controller.deregistered
    assert target == iid
    assert returned >= deregistered_at + 12
    assert iid not in target_states(aws, tg)
    lbs = inst["gates"]["load_balancers"]
    assert lbs["held"] == [f"tg-web ({iid})"] and lbs["target_groups"] == ["tg-web"]
    assert lbs["still_draining"] == [] and lbs["waited_seconds"] >= 3
    assert run.metric_total("TargetsDeregistered", cluster="blue") == 1
    assert run.metric_total("DeregistrationWaitSeconds", cluster="blue") >= 3
    (completed,) = [m for m in lam.notifications() if m["phase"] == "completed"]
    assert completed["gates"]["load_balancers"]["held"] == [f"tg-web ({iid})"]
    assert "for load-balancer deregistration" in _node_events(k8s, node)["DrainCompleted"]


def test_deadline_reached_while_still_draining_completes_with_the_configured_result_and_names_the_reason(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, volumes: VolumeAttachments
) -> None:
    iid, node = _instance_with_pods(aws, k8s)
    tg = target_group(aws, "tg-slow", delay=600)
    register(aws, tg, [iid])
    stuck = volumes.attach(node, "pv-data")
    with LoadBalancerControllerStandIn(aws, k8s, {node: iid}, [tg]):
        run = _terminate(aws, lam, iid, DEADLINE_ASG_TERMINATE_SECONDS="25", LIFECYCLE_RESULT_ON_FAILURE="ABANDON")
    inst = _only(run)
    assert inst["result"] == "gate-held"
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "ABANDON"
    reason = inst["error"]["message"]
    assert reason == f"gate: targets still draining: tg-slow ({iid}); volumes still attached: {stuck} (pv-data)"
    assert inst["gates"]["load_balancers"]["still_draining"] == [f"tg-slow ({iid})"]
    assert inst["gates"]["volumes"]["still_attached"] == [f"{stuck} (pv-data)"]
    assert target_states(aws, tg)[iid] == "draining"
    (failed,) = [m for m in lam.notifications() if m["phase"] == "failed"]
    assert failed["error"]["message"] == reason
    assert reason in _node_events(k8s, node)["DrainFailed"]


def test_ip_mode_targets_of_the_nodes_pods_hold_the_hook_and_other_pods_do_not(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node = _instance_with_pods(aws, k8s, app="api", replicas=2)
    ips = sorted(p.status.pod_ip for p in k8s.pods("app=api", node=node))
    assert len(ips) == 2 and all(ips), "fixture: kwok gives the node's pods IPs"
    k8s.deployment("other", 1, nodes=[n for n in k8s.nodes if n != node])
    (other,) = k8s.wait_pods_ready("app=other", 1)
    # draining outlasts the drain and its late look (to 5 s after the cordon), even on a loaded host: the gate sees it
    tg = target_group(aws, "tg-api-ip", kind="ip", delay=12)
    register(aws, tg, [*ips, other.status.pod_ip])
    with LoadBalancerControllerStandIn(aws, k8s, {node: iid}, [tg]) as controller:
        run = _terminate(aws, lam, iid)
    inst = _only(run)
    assert inst["result"] == "drained"
    # the drainer's IPs come from its first pass's LIST of the node's pods: no LIST of their own before the drain
    assert not [op for op in run.operations if getattr(op, "name", "") == "gate-pod-ips"]
    lbs = inst["gates"]["load_balancers"]
    assert lbs["held"] == sorted(f"tg-api-ip ({ip})" for ip in ips)
    assert lbs["still_draining"] == []
    assert {t for _, t, _ in controller.deregistered} == set(ips)
    states = target_states(aws, tg)
    assert not set(ips) & set(states)  # drained away before the hook was completed
    assert states[other.status.pod_ip] == "healthy"  # another node's pod: not the drain's business


def test_target_group_registered_by_hand_is_deregistered_by_the_orchestrator(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, _node = _instance_with_pods(aws, k8s)
    tg = target_group(aws, "tg-by-hand", cluster=None, delay=4)  # no controller tag, no controller
    register(aws, tg, [iid])
    run = _terminate(aws, lam, iid, TARGET_GROUP_ARNS=tg)
    inst = _only(run)
    assert inst["result"] == "drained" and inst["lifecycle"]["outcome"] == "completed"
    lbs = inst["gates"]["load_balancers"]
    assert lbs["deregistered"] == [f"tg-by-hand ({iid})"] and lbs["held"] == [f"tg-by-hand ({iid})"]
    assert lbs["waited_seconds"] >= 3 and lbs["still_draining"] == []
    assert iid not in target_states(aws, tg)  # deregistered, then drained away before the hook was completed


def test_volumes_released_late_hold_the_hook_until_detached(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, volumes: VolumeAttachments
) -> None:
    iid, node = _instance_with_pods(aws, k8s)
    (other_node,) = [n for n in k8s.nodes if n != node]
    late = volumes.attach(node, "pv-late")
    elsewhere = volumes.attach(other_node, "pv-elsewhere")
    volumes.release_once_drained(late, k8s, node, "web", 9)
    run = _terminate(aws, lam, iid)
    inst = _only(run)
    assert inst["result"] == "drained" and inst["lifecycle"]["outcome"] == "completed"
    assert not volumes.exists(late)
    vols = inst["gates"]["volumes"]
    assert vols["held"] == [f"{late} (pv-late)"] and vols["still_attached"] == []
    assert vols["waited_seconds"] >= 2
    assert volumes.exists(elsewhere)  # not this node's: never waited on
    assert "for volumes to detach" in _node_events(k8s, node)["DrainCompleted"]


def test_a_node_whose_status_records_no_volume_is_not_listed_for_while_another_nodes_attachment_stays(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, volumes: VolumeAttachments
) -> None:
    iid, node = _instance_with_pods(aws, k8s)
    (other_node,) = [n for n in k8s.nodes if n != node]
    elsewhere = volumes.attach(other_node, "pv-elsewhere")
    offset = audit_offset(testbed)
    run = _terminate(aws, lam, iid)
    inst = _only(run)
    assert inst["result"] == "drained" and inst["lifecycle"]["outcome"] == "completed"
    assert inst["gates"]["volumes"]["held"] == [] and inst["gates"]["volumes"]["still_attached"] == []
    # the cordon's answer said the node has no volume: the cluster-wide list of attachments is not asked for
    counted = by_verb_and_resource(function_requests(testbed, offset))
    assert counted["patch nodes"] >= 1, counted
    assert counted["list volumeattachments"] == 0, counted
    assert volumes.exists(elsewhere)


def test_volumes_of_pods_left_on_the_node_on_purpose_do_not_hold_the_hook(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, volumes: VolumeAttachments
) -> None:
    iid, node = _instance_with_pods(aws, k8s)
    tag = k8s.run_id
    pvs = {role: f"pv-{role}-{tag}" for role in ("ds", "mirror", "skip", "web")}
    try:
        for role, pv in pvs.items():
            bound_claim(k8s, f"data-{role}", pv)
        body = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": k8s.ns},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": k8s.pod_spec(nodes=[node], extra=claim_volume("data-ds")),
                },
            },
        }
        k8s.apps.create_namespaced_daemon_set(k8s.ns, body)
        mirror = {"annotations": {"kubernetes.io/config.mirror": "x"}}
        k8s.bare_pod("static", node=node, metadata_extra=mirror, spec_extra=claim_volume("data-mirror"))
        skip = {"annotations": {"drain-orchestrator.io/drain-policy": "skip"}}
        k8s.bare_pod("cache", node=node, metadata_extra=skip, spec_extra=claim_volume("data-skip"))
        k8s.wait_pods_ready("app=agent", 1)
        kept = {role: volumes.attach(node, pv) for role, pv in pvs.items() if role != "web"}
        evicted = volumes.attach(node, pvs["web"])  # a volume of an evicted pod: waited on until detached
        volumes.release_once_drained(evicted, k8s, node, "web", 9)
        run = _terminate(aws, lam, iid, DEADLINE_ASG_TERMINATE_SECONDS="90")
        inst = _only(run)
        assert inst["result"] == "drained" and inst["lifecycle"]["outcome"] == "completed"
        vols = inst["gates"]["volumes"]
        assert vols["held"] == [f"{evicted} ({pvs['web']})"] and vols["still_attached"] == []
        assert sorted(vols["left_with_their_pods"]) == sorted(
            [
                f"{kept['ds']} ({pvs['ds']}) for {k8s.ns}/{k8s.pods('app=agent')[0].metadata.name}",
                f"{kept['mirror']} ({pvs['mirror']}) for {k8s.ns}/static",
                f"{kept['skip']} ({pvs['skip']}) for {k8s.ns}/cache",
            ]
        )
        assert vols["waited_seconds"] < 60  # released with the evicted pod's volume, not at the deadline
        assert all(volumes.exists(name) for name in kept.values())  # still attached: their pods stay
    finally:
        delete_volumes(k8s, list(pvs.values()))


def test_no_load_balancer_costs_one_call_and_no_wait(aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness) -> None:
    iid, _node = _instance_with_pods(aws, k8s)
    target_group(aws, "tg-not-ours", cluster="green")  # another cluster's: listed, never looked into
    elbv2_calls(aws, reset=True)
    run = _terminate(aws, lam, iid)
    inst = _only(run)
    assert inst["result"] == "drained"
    lbs = inst["gates"]["load_balancers"]
    assert lbs == {
        "held": [],
        "waited_seconds": 0.0,
        "still_draining": [],
        "target_groups": [],
        "deregistered": [],
        "api_calls": 2,
    }
    assert elbv2_calls(aws) == {"DescribeTargetGroups": 1, "DescribeTags": 1}
    assert not [op for op in run.operations if str(getattr(op, "name", "")).startswith("gate-wait")]

    elbv2_calls(aws, reset=True)
    iid2 = aws.asg("ng-blue-2", size=1, tags=OWNED)[0]
    aws.nodes_for(k8s, [iid2])
    token = aws.start_lifecycle_action("ng-blue-2", "drain", iid2)
    lam.configure("blue", WAIT_FOR_DEREGISTRATION="never")
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid2, asg="ng-blue-2", hook="drain", token=token)
    inst = _only(lam.run(event, skip_time=False))
    assert inst["result"] == "drained" and "load_balancers" not in inst.get("gates", {})
    assert elbv2_calls(aws) == {}


def test_terminated_instance_node_gets_the_out_of_service_taint_only_when_enabled(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    first, second = aws.instance(tags=OWNED), aws.instance(tags=OWNED)
    node_on, node_off = aws.nodes_for(k8s, [first, second])

    def taints(node: str) -> list[tuple[str, str, str]]:
        return [(t.key, t.value, t.effect) for t in k8s.core.read_node(node).spec.taints or []]

    aws.terminate_instance(first)
    aws.terminate_instance(second)
    lam.configure("blue", OUT_OF_SERVICE_TAINT="true")
    inst = _only(lam.run(samples.ec2_event("state-change-terminated.json", instance_id=first)))
    assert inst["out_of_service"] is True
    assert ("node.kubernetes.io/out-of-service", "nodeshutdown", "NoExecute") in taints(node_on)

    lam.monkeypatch.delenv("OUT_OF_SERVICE_TAINT")
    lam.configure("blue")  # off by default
    inst = _only(lam.run(samples.ec2_event("state-change-terminated.json", instance_id=second)))
    assert "out_of_service" not in inst
    assert not [t for t in taints(node_off) if t[0] == "node.kubernetes.io/out-of-service"]


@pytest.mark.parametrize("reported", ["running", "stopping"])
def test_a_terminated_instance_ec2_reports_otherwise_at_the_taint_step_is_drained_without_the_out_of_service_taint(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, reported: str
) -> None:
    """DescribeInstances is eventually consistent: the decision's read reports the instance terminated (the event is
    borne out), the taint step's read a state in which its kubelet may still run. The drain goes on; the taint, which
    force-detaches the node's volumes, waits for EC2's own word and so is not added."""
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on("web", 2, [node], spare, grace=0)
    aws.terminate_instance(iid)
    aws.report_state_after(iid, reported, reads=1)  # the decision's read: terminated; every later one: `reported`
    lam.configure("blue", OUT_OF_SERVICE_TAINT="true")
    offset = audit_offset(testbed)

    run = lam.run(samples.ec2_event("state-change-terminated.json", instance_id=iid))

    inst = _only(run)
    assert (inst["result"], inst["out_of_service"]) == ("drained", False), inst
    assert aws.describe(iid)["State"]["Name"] == reported  # what the taint step was told
    now = k8s.core.read_node(node)
    assert now.spec.unschedulable
    assert [t.key for t in now.spec.taints or [] if t.key == "node.kubernetes.io/out-of-service"] == []
    assert run.metric_total("NodesTaintedOutOfService", cluster="blue", kind="state-change") == 0
    evicted = [
        e
        for e in function_requests(testbed, offset)
        if (e.get("objectRef") or {}).get("subresource") == "eviction" and e["responseStatus"]["code"] < 300
    ]
    assert len(evicted) == 2, by_verb_and_resource(function_requests(testbed, offset))  # drained by evictions

"""Capacity Block events end to end: durable local runner + the AWS emulator + the real control plane. The events name
a reservation, not an instance: the instances EC2 lists in it are drained by the block's end less 30 minutes (when
EC2 starts terminating them). The expiration warning drains at once; the Delivered event waits durably until
CAPACITY_BLOCK_LEAD_SECONDS before then. An instance of the same cluster outside the reservation, or one in it that
another cluster owns, is not touched."""

from __future__ import annotations

import time

import pytest
from kubernetes.client.rest import ApiException

from drain_orchestrator.kube.cordon import ANN_DEADLINE, ANN_REASON
from drain_orchestrator.timefmt import iso_utc
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness
from tests.integration.return_support import until
from tests.integration.scenario_support import OWNED, pods_on

pytestmark = pytest.mark.integration
KIND = "capacity-block-expiring"
RESERVATION = "cr-0123456789abcdef0"
WARNING = "capacity-block-expiration-warning.json"
DELIVERED = "capacity-block-delivered.json"
TERMINATION = 1800  # EC2 starts terminating a block's instances 30 minutes before its end
WARNED = 2400  # the warning comes 40 minutes before the end


def test_the_warning_drains_the_reservations_instance_by_the_blocks_end_and_leaves_the_others(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    inside = aws.instance(tags=OWNED)
    outside = aws.instance(tags=OWNED)  # same cluster, owned: only the reservation tells them apart
    aws.place_in_capacity_reservation(inside, RESERVATION)
    inside_node, outside_node = aws.nodes_for(k8s, [inside, outside])
    (spare,) = k8s.add_nodes(1)
    # a pod asking for 10 minutes of grace on the block's node; another on the node outside the block
    k8s.deployment_on("trainer", 1, [inside_node], spare, grace=600)
    (pod,) = pods_on(k8s, inside_node)
    k8s.deployment("web", 1, nodes=[outside_node])
    k8s.wait_pods_ready("app=web", 1)
    lam.configure("blue")
    # the block ends so that EC2 starts terminating its instances 20 s from now: the drain's deadline, which only
    # the event's end-date gives (no instance, no termination time in the event)
    end = int(time.time()) + TERMINATION + 20
    deadline = end - TERMINATION
    event = samples.capacity_block_event(WARNING, RESERVATION, sent=end - WARNED, end=end)

    run = lam.run(event, now=False)

    assert run.status == "SUCCEEDED", run.error
    assert run.result is not None and run.result["kind"] == KIND
    (inst,) = run.result["instances"]
    assert (inst["instance_id"], inst["cluster"], inst["node"]) == (inside, "blue", inside_node)
    assert inst["result"] in ("drained", "deadline-missed")
    assert time.time() < deadline + 15
    assert outside not in [d["instance_id"] for d in run.result.get("not_acted_on", [])]  # never even looked at
    names = [str(getattr(op, "name", "") or "") for op in run.operations]
    assert "reservation-instances" in names and "until-block-drain" not in names  # the warning does not wait
    marks = k8s.core.read_node(inside_node)
    assert marks.spec.unschedulable is True
    assert marks.metadata.annotations[ANN_REASON] == KIND
    assert marks.metadata.annotations[ANN_DEADLINE] == iso_utc(deadline)
    try:  # asked to stop with a grace that ends by the block's termination time, not the pod's 10 minutes
        gone = k8s.core.read_namespaced_pod(pod.metadata.name, k8s.ns)
        assert gone.metadata.deletion_timestamp is not None
        assert gone.metadata.deletion_grace_period_seconds <= 20
    except ApiException as e:
        assert e.status == 404
    # the instance outside the reservation: schedulable, unmarked, its pod in place
    other = k8s.core.read_node(outside_node)
    assert not other.spec.unschedulable
    assert ANN_REASON not in (other.metadata.annotations or {})
    assert len(pods_on(k8s, outside_node)) == 1
    assert run.metric_total("EventsReceived", kind=KIND) == 1
    assert run.metric_total("NodesCordoned", cluster="blue", kind=KIND) == 1
    assert run.metric_total("Errors") == 0


def test_a_delivered_block_waits_durably_until_its_lead_then_drains_only_its_clusters_instances(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    ours = aws.instance(tags=OWNED)
    theirs = aws.instance(tags={"kubernetes.io/cluster/green": "owned"})  # another cluster's, in the same block
    for iid in (ours, theirs):
        aws.place_in_capacity_reservation(iid, RESERVATION)
    our_node, their_node = aws.nodes_for(k8s, [ours, theirs])
    k8s.deployment("web", 1, nodes=[our_node])
    k8s.deployment("other", 1, nodes=[their_node])
    k8s.wait_pods_ready("app in (web, other)", 2)
    lead, due_in = 20, 12
    lam.configure("blue", CAPACITY_BLOCK_LEAD_SECONDS=str(lead))
    # the block ends so that its drain is due (end - 30 min - lead) due_in seconds from now
    end = int(time.time()) + TERMINATION + lead + due_in
    begins, deadline = end - TERMINATION - lead, end - TERMINATION
    run = lam.start(samples.capacity_block_event(DELIVERED, RESERVATION, sent=time.time(), end=end))

    run.step("block-clock")
    # the durable wait: nothing is listed, cordoned or evicted before the drain is due
    until("the wait to begin", lambda: "until-block-drain" in run.begun(), timeout=30)
    assert time.time() < begins
    assert "reservation-instances" not in run.steps()
    assert not k8s.core.read_node(our_node).spec.unschedulable
    done = run.finish()
    out = lam.collect()

    assert done.status == "SUCCEEDED", done.error
    assert done.result is not None and done.result["kind"] == "capacity-block-delivered"
    (inst,) = done.result["instances"]
    assert (inst["instance_id"], inst["cluster"], inst["node"]) == (ours, "blue", our_node)
    assert inst["result"] == "drained"
    (other,) = done.result["not_acted_on"]
    assert (other["instance_id"], other["reason"], other["action"]) == (theirs, "other-cluster", "skip")
    assert "until-block-drain" in [getattr(op, "name", None) for op in done.operations]
    listed = done.step("reservation-instances")
    assert sorted(listed["instance_ids"]) == sorted([ours, theirs])
    assert listed["now"] >= begins - 1  # the wait's seconds are whole: it may end up to one early
    assert done.cordoned()["now"] >= begins - 1
    marks = k8s.core.read_node(our_node)
    assert marks.spec.unschedulable is True
    assert marks.metadata.annotations[ANN_REASON] == "capacity-block-delivered"
    assert marks.metadata.annotations[ANN_DEADLINE] == iso_utc(deadline)
    assert pods_on(k8s, our_node) == []
    # the other cluster's instance: schedulable, unmarked, its pod in place
    left = k8s.core.read_node(their_node)
    assert not left.spec.unschedulable
    assert ANN_REASON not in (left.metadata.annotations or {})
    assert len(pods_on(k8s, their_node)) == 1
    assert out.metric_total("NodesCordoned", cluster="blue", kind="capacity-block-delivered") == 1
    assert out.metric_total("EventsIgnored", reason="other-cluster", kind="capacity-block-delivered") == 1

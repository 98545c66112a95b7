"""A Capacity Block's expiration warning end to end: durable local runner + the AWS emulator + the real control plane.
The event names a reservation, not an instance: the instances EC2 lists in it are drained by the block's end less
30 minutes (when EC2 starts terminating them), and an instance of the same cluster outside the reservation is not
touched."""

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
from tests.integration.scenario_support import OWNED, pods_on

pytestmark = pytest.mark.integration
KIND = "capacity-block-expiring"
RESERVATION = "cr-0123456789abcdef0"
WARNING = "capacity-block-expiration-warning.json"
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

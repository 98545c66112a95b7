"""The interruptible capacity reservation's warning end to end: durable local runner + the AWS emulator + the real
control plane. The node is drained by the termination time the event carries, not by a guess."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from drain_orchestrator.cli import main
from drain_orchestrator.kube.cordon import ANN_DEADLINE, ANN_REASON
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}
KIND = "capacity-reservation-interruption"


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _warning(instance_id: str, *, sent: float, terminates: float | None) -> dict[str, Any]:
    event = samples.ec2_event("capacity-reservation-interruption.json", instance_id=instance_id)
    event["time"] = _iso(sent)
    if terminates is None:
        del event["detail"]["instance-termination-time"]
    else:
        event["detail"]["instance-termination-time"] = _iso(terminates)
    return event


def _node_pods(k8s: KubeScenario, node: str) -> list[Any]:
    return [
        p
        for p in k8s.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
        if p.metadata.deletion_timestamp is None
    ]


def test_warning_is_owned_and_drained_with_grace_clipped_to_the_termination_time(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    # a pod asking for 10 minutes of grace; EC2 terminates the instance 20 s from now
    k8s.deployment_on("slow", 1, [node], spare, grace=600)
    (pod,) = _node_pods(k8s, node)
    # the respectful minimum (MIN_DRAIN_SECONDS, 30 s by default) would put the deadline past a termination 20 s away
    lam.configure("blue", MIN_DRAIN_SECONDS="10")
    started = time.time()
    # sent just now: without the termination time the deadline would be ~115 s away, and the grace with it
    terminates = int(started) + 20
    run = lam.run(_warning(iid, sent=started - 5, terminates=terminates), now=False)

    assert run.status == "SUCCEEDED", run.error
    assert run.result is not None and run.result["kind"] == KIND
    (inst,) = run.result["instances"]
    assert (inst["instance_id"], inst["cluster"], inst["node"]) == (iid, "blue", node)
    assert inst["result"] in ("drained", "deadline-missed")
    assert time.time() < terminates + 15
    annotations = k8s.core.read_node(node).metadata.annotations
    assert annotations[ANN_REASON] == KIND
    assert annotations[ANN_DEADLINE] == _iso(terminates)
    assert k8s.core.read_node(node).spec.unschedulable is True
    try:  # asked to stop with a grace that ends by the termination time
        gone = k8s.core.read_namespaced_pod(pod.metadata.name, k8s.ns)
        assert gone.metadata.deletion_timestamp is not None
        assert gone.metadata.deletion_grace_period_seconds <= 20
    except ApiException as e:
        assert e.status == 404
    assert run.metric_total("EventsReceived", kind=KIND) == 1
    assert run.metric_total("NodesCordoned", cluster="blue", kind=KIND) == 1
    assert run.metric_total("Errors") == 0


def test_cordon_setting_leaves_the_pods_and_another_clusters_instance_is_left_alone(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    ours = aws.instance(tags=OWNED)
    theirs = aws.instance(tags={"kubernetes.io/cluster/green": "owned"})
    ours_node, theirs_node = aws.nodes_for(k8s, [ours, theirs])
    k8s.deployment("web", 1, nodes=[ours_node])
    k8s.wait_pods_ready("app=web", 1)
    lam.configure("blue", ACTION_CAPACITY_RESERVATION_INTERRUPTION="cordon")
    now = time.time()

    cordoned = lam.run(_warning(ours, sent=now, terminates=None), now=False)
    other = lam.run(_warning(theirs, sent=now, terminates=now + 120), now=False)

    assert cordoned.status == "SUCCEEDED", cordoned.error
    assert cordoned.result is not None
    (inst,) = cordoned.result["instances"]
    assert inst["result"] == "cordoned"
    assert k8s.core.read_node(ours_node).spec.unschedulable is True
    assert len(_node_pods(k8s, ours_node)) == 1  # nothing evicted
    # no termination time in the event: two minutes after it
    assert k8s.core.read_node(ours_node).metadata.annotations[ANN_DEADLINE] == _iso(int(now) + 120)
    assert other.status == "SUCCEEDED", other.error
    assert other.result is not None and other.result["instances"] == []
    assert [(d["instance_id"], d["reason"]) for d in other.result["not_acted_on"]] == [(theirs, "other-cluster")]
    assert not k8s.core.read_node(theirs_node).spec.unschedulable


def test_explain_now_shows_the_kind_and_two_minutes_left(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    event = tmp_path / "warning.json"
    event.write_text(json.dumps(samples.ec2_event("capacity-reservation-interruption.json", instance_id=iid)))
    for key, value in aws.lambda_env("blue")[0].items():
        monkeypatch.setenv(key, value)
    capsys.readouterr()

    code = main(["explain", "--now", str(event), "--kubeconfig", str(testbed.kubeconfig)])

    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["event"]["kind"] == KIND
    assert 110 <= out["event"]["seconds_left"] <= 120  # the sample's termination time, moved with its time
    (decision,) = out["decisions"]
    assert (decision["owned"], decision["cluster"], decision["action"], decision["node"]) == (
        True,
        "blue",
        "drain",
        node,
    )

"""Return to service on the real control plane: a node cordoned for a rebalance recommendation that nothing followed
is made schedulable again by the execution that cordoned it, and a cordon that is not that execution's (an
operator's before ours, another tool's after ours, a new Node object under the same name) is never undone, nor one a
Spot interruption warning for the same instance has since drained."""

from __future__ import annotations

from typing import Any

import pytest

from drain_orchestrator.returns import ANN_RETURN
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import CallbackApi, LambdaHarness, Run
from tests.integration.return_support import marked, node_events, owned_node_with_a_pod, until

pytestmark = pytest.mark.integration
# long enough for the helper thread to act between the cordon and the return's look, on a loaded machine
RETURN_AFTER = "20"


def test_a_rebalance_nothing_followed_returns_its_node_with_no_pod_evicted(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, pod_uid = owned_node_with_a_pod(aws, k8s)
    lam.configure("blue", REBALANCE_RETURN_SECONDS="3600")  # the durable wait is skipped by the local runner
    run = lam.run(samples.ec2_event("rebalance-recommendation.json", instance_id=iid))
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "cordoned"
    assert inst["returned"]["status"] == "returned" and inst["returned"]["reason"] == "no-interruption-followed"
    n = k8s.core.read_node(node)
    assert not n.spec.unschedulable
    assert ANN_RETURN not in (n.metadata.annotations or {})
    (pod,) = k8s.core.list_namespaced_pod(k8s.ns, label_selector="app=web").items
    assert pod.metadata.uid == pod_uid and pod.spec.node_name == node  # nothing evicted
    assert sorted(node_events(k8s, node)) == ["NodeCordoned", "ReturnedToService"]
    (said,) = lam.notifications()
    assert said["phase"] == "returned-to-service" and said["reason"] == "no-interruption-followed"
    assert run.metric_total("NodesReturned", cluster="blue", kind="rebalance") == 1
    names = [op.name for op in run.operations]
    assert "return-wait-0" in names and "return-look-0" in names and "return" in names


def test_an_operators_cordon_before_the_rebalance_is_kept(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, _ = owned_node_with_a_pod(aws, k8s)
    k8s.core.patch_node(node, {"spec": {"unschedulable": True}})
    lam.configure("blue", REBALANCE_RETURN_SECONDS="3600")
    run = lam.run(samples.ec2_event("rebalance-recommendation.json", instance_id=iid))
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "cordoned"
    # the node was unschedulable before: the cordon wrote no mark, so the watch finds nothing of its own to undo
    assert inst["returned"] == {"status": "kept", "reason": "not-ours"}
    n = k8s.core.read_node(node)
    assert n.spec.unschedulable is True
    assert ANN_RETURN not in (n.metadata.annotations or {})
    assert "ReturnedToService" not in node_events(k8s, node)
    assert run.metric_total("NodesReturned") == 0


def test_a_node_cordoned_again_by_another_tool_after_ours_is_not_uncordoned(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, _ = owned_node_with_a_pod(aws, k8s)
    lam.configure("blue", REBALANCE_RETURN_SECONDS=RETURN_AFTER)

    def recordon(_: CallbackApi) -> None:
        until("the orchestrator's cordon", lambda: marked(k8s, node))
        # kubectl uncordon, then kubectl cordon: our annotations stay, the cordon is the other tool's now
        k8s.core.patch_node(node, {"spec": {"unschedulable": False}})
        k8s.core.patch_node(node, {"spec": {"unschedulable": True}})

    run = lam.run_answering(samples.ec2_event("rebalance-recommendation.json", instance_id=iid), recordon)
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["returned"] == {"status": "kept", "reason": "cordoned-by-another"}
    assert k8s.core.read_node(node).spec.unschedulable is True
    assert "ReturnedToService" not in node_events(k8s, node)


def test_a_new_node_object_under_the_same_name_is_not_uncordoned(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, _ = owned_node_with_a_pod(aws, k8s)
    lam.configure("blue", REBALANCE_RETURN_SECONDS=RETURN_AFTER)
    before: dict[str, Any] = {}

    def replace_node(_: CallbackApi) -> None:
        until("the orchestrator's cordon", lambda: marked(k8s, node))
        old = k8s.core.read_node(node)
        before["uid"] = old.metadata.uid
        k8s.core.delete_node(node)
        until("the old Node to go", lambda: node not in {n.metadata.name for n in k8s.core.list_node().items})
        zone = old.metadata.labels["topology.kubernetes.io/zone"]
        k8s.add_nodes(1, zone=zone, names=[node], provider_ids=[old.spec.provider_id])
        k8s.core.patch_node(node, {"spec": {"unschedulable": True}})  # cordoned by whoever registered it

    run = lam.run_answering(samples.ec2_event("rebalance-recommendation.json", instance_id=iid), replace_node)
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["returned"] == {"status": "kept", "reason": "not-ours"}
    n = k8s.core.read_node(node)
    assert n.metadata.uid != before["uid"]
    assert n.spec.unschedulable is True


def test_a_rebalance_followed_by_a_spot_interruption_warning_is_drained_and_never_returned(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, pod_uid = owned_node_with_a_pod(aws, k8s)
    lam.configure("blue", REBALANCE_RETURN_SECONDS=RETURN_AFTER)
    warned: dict[str, Run] = {}

    def spot_warning(_: CallbackApi) -> None:
        until("the rebalance's cordon", lambda: marked(k8s, node))
        warning = samples.ec2_event("spot-interruption-terminate.json", instance_id=iid)
        warned["run"] = lam.run_in_thread(warning)

    run = lam.run_answering(samples.ec2_event("rebalance-recommendation.json", instance_id=iid), spot_warning)
    assert run.status == "SUCCEEDED", run.error
    spot = warned["run"]
    assert spot.status == "SUCCEEDED", spot.error
    (drained,) = spot.result["instances"]
    assert drained["result"] == "drained"
    assert "returned" not in drained  # an instance that goes away is not watched
    (inst,) = run.result["instances"]
    assert inst["result"] == "cordoned"
    # the warning's cordon took the rebalance's mark away: the rebalance's watch finds nothing of its own to undo
    assert inst["returned"] == {"status": "kept", "reason": "not-ours"}
    n = k8s.core.read_node(node)
    assert n.spec.unschedulable is True
    assert ANN_RETURN not in (n.metadata.annotations or {})
    pods = k8s.core.list_namespaced_pod(k8s.ns, label_selector="app=web").items
    assert pod_uid not in {p.metadata.uid for p in pods}  # evicted by the warning's drain
    assert "ReturnedToService" not in node_events(k8s, node)
    assert run.metric_total("NodesReturned") == 0

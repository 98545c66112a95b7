"""Issue 4, end to end over HTTP: moto server (with the lifecycle-action extension) and the real apiserver,
reached through the EKS token webhook with the Lambda's assumed-role credentials and the shipped RBAC."""

from __future__ import annotations

from typing import Any

import pytest

from drain_orchestrator.decide import with_hook_deadline
from drain_orchestrator.events import Interruption, parse_event
from drain_orchestrator.ownership import Reason
from tests import samples
from tests.integration.ownership_support import Product, action_state, grant, settings

pytestmark = pytest.mark.integration

IMPOSSIBLE = "i-0000000000000dead"


def _terminate(aws: Any, asg: str, instance_id: str, hook: str = "drain") -> dict[str, Any]:
    token = aws.start_lifecycle_action(asg, hook, instance_id)
    return samples.lifecycle_event("asg-terminate.json", instance_id=instance_id, asg=asg, hook=hook, token=token)


def _calls_to_cluster(testbed: Any, cluster: str) -> list[dict[str, Any]]:
    return [a for a in testbed.authentications() if a.get("cluster") == cluster]


def test_1_instance_of_another_cluster_is_skipped_and_its_hook_left_alone(testbed: Any, aws: Any) -> None:
    [iid] = aws.asg("green-nodes", size=1, tags={"kubernetes.io/cluster/green": "owned"})
    raw = _terminate(aws, "green-nodes", iid)
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))
    audited = len(testbed.authentications())  # the audit log spans the session: look at this test's part

    [out] = product.process(raw)

    assert (out.decision.owned, out.decision.cluster, out.decision.reason) == (
        False,
        "green",
        Reason.OTHER_CLUSTER,
    )
    assert out.lifecycle == "left-to-owner"
    assert action_state(aws, iid)["state"] == "ACTIVE"  # untouched: the owner completes it
    assert product.metrics == [("EventsIgnored", {"reason": "other-cluster", "kind": "asg-terminate"})]
    assert testbed.authentications()[audited:] == []  # not even a Kubernetes call


def test_2_owned_asg_instance_without_node_completes_the_hook_with_continue(testbed: Any, aws: Any) -> None:
    grant(testbed, aws, "blue")
    [iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    raw = _terminate(aws, "blue-nodes", iid)
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))
    audited = len(testbed.authentications())

    [out] = product.process(raw)

    assert (out.decision.owned, out.decision.reason, out.decision.action) == (
        True,
        Reason.NO_NODE,
        "complete-lifecycle",
    )
    assert out.lifecycle == "completed"
    action = action_state(aws, iid)
    assert (action["state"], action["result"]) == ("COMPLETED", "CONTINUE")
    # the node lookup really went to the apiserver with the Lambda's role, and was allowed
    calls = testbed.authentications()[audited:]
    assert calls and all(c["allowed"] for c in calls)
    assert {c["arn"] for c in calls} == {aws.role_arn("drain-orchestrator")}


def test_3_instance_unknown_to_ec2_is_skipped_and_its_hook_untouched(testbed: Any, aws: Any) -> None:
    grant(testbed, aws, "blue")
    [iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    aws.start_lifecycle_action("blue-nodes", "drain", iid)
    raw = samples.lifecycle_event(
        "asg-terminate.json", instance_id=IMPOSSIBLE, asg="blue-nodes", hook="drain", token=None
    )
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))

    [out] = product.process(raw)

    assert (out.decision.owned, out.decision.reason, out.decision.action) == (
        False,
        Reason.UNKNOWN_INSTANCE,
        "skip",
    )
    assert out.lifecycle == "left-to-owner"
    assert action_state(aws, iid)["state"] == "ACTIVE"
    spot = samples.ec2_event("spot-interruption-terminate.json", instance_id=IMPOSSIBLE)
    [spot_out] = product.process(spot)
    assert (spot_out.decision.reason, spot_out.lifecycle) == (Reason.UNKNOWN_INSTANCE, "not-applicable")


def test_4_one_deployment_routes_each_event_to_its_own_cluster(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    grant(testbed, aws, "green")
    [blue_iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    [green_iid] = aws.asg("green-nodes", size=1, tags={"eks:cluster-name": "green"}, az="us-east-1b")
    [blue_node] = aws.nodes_for(k8s, [blue_iid])
    [green_node] = aws.nodes_for(k8s, [green_iid])
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue,green"))

    before_blue, before_green = (
        len(_calls_to_cluster(testbed, "blue")),
        len(_calls_to_cluster(testbed, "green")),
    )
    [blue] = product.process(samples.ec2_event("spot-interruption-terminate.json", instance_id=blue_iid))
    assert (blue.decision.cluster, blue.decision.node, blue.decision.action) == ("blue", blue_node, "drain")
    assert len(_calls_to_cluster(testbed, "blue")) > before_blue
    assert len(_calls_to_cluster(testbed, "green")) == before_green

    [green] = product.process(samples.ec2_event("rebalance-recommendation.json", instance_id=green_iid))
    assert (green.decision.cluster, green.decision.node, green.decision.action) == (
        "green",
        green_node,
        "cordon",
    )
    assert len(_calls_to_cluster(testbed, "green")) > before_green
    # two clusters, two cached clients with their own token
    assert product.connector.api_client("blue") is not product.connector.api_client("green")
    assert product.tokens.generated == 2


def test_5_ownership_only_on_the_asg_tags(testbed: Any, aws: Any) -> None:
    grant(testbed, aws, "blue")
    [iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"}, propagate=False)
    assert not any(t["Key"].startswith("kubernetes.io/") for t in aws.describe(iid).get("Tags", []))
    raw = _terminate(aws, "blue-nodes", iid)
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))

    [out] = product.process(raw)

    assert (out.decision.owned, out.decision.cluster) == (True, "blue")
    assert out.decision.reason == Reason.NO_NODE  # owned through the ASG, and no node joined
    assert out.lifecycle == "completed"
    assert action_state(aws, iid)["state"] == "COMPLETED"


def test_5b_asg_tags_decide_with_owned_asg_tag_reason(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    [iid] = aws.asg("blue-nodes", size=1, tags={"eks:cluster-name": "blue"}, propagate=False)
    [node] = aws.nodes_for(k8s, [iid])
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))
    [out] = product.process(_terminate(aws, "blue-nodes", iid))
    assert (out.decision.reason, out.decision.node, out.decision.action) == (
        Reason.OWNED_ASG_TAG,
        node,
        "drain",
    )
    assert out.lifecycle == "not-applicable"  # a node to drain: the workflow completes the hook afterwards
    assert action_state(aws, iid)["state"] == "ACTIVE"


def test_6_a_tag_value_that_does_not_match(testbed: Any, aws: Any) -> None:
    [iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "yes"})
    raw = _terminate(aws, "blue-nodes", iid)
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))
    [out] = product.process(raw)
    assert (out.decision.owned, out.decision.reason) == (False, Reason.TAG_VALUE_MISMATCH)
    assert out.lifecycle == "left-to-owner"
    assert action_state(aws, iid)["state"] == "ACTIVE"

    marked = aws.instance(tags={"drain-orchestrator": "off"})
    custom = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue", OWNERSHIP_TAG="drain-orchestrator=on"))
    [out] = custom.process(samples.ec2_event("state-change-stopping.json", instance_id=marked))
    assert (out.decision.owned, out.decision.reason) == (False, Reason.TAG_VALUE_MISMATCH)


def test_7_node_named_by_instance_id(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    iid = aws.instance(tags={"eks:cluster-name": "blue"})
    [node] = aws.nodes_for(k8s, [iid], by="id")
    assert node == iid
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))
    [out] = product.process(samples.ec2_event("state-change-stopping.json", instance_id=iid))
    assert (out.decision.reason, out.decision.node, out.decision.action) == (
        Reason.OWNED_INSTANCE_TAG,
        iid,
        "drain",
    )


def test_9_hook_already_completed_is_success(testbed: Any, aws: Any) -> None:
    from drain_orchestrator.aws.autoscaling import complete_lifecycle_action, describe_hook, record_heartbeat
    from drain_orchestrator.aws.clients import autoscaling_client

    [iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    token = aws.start_lifecycle_action("blue-nodes", "drain", iid)
    asc = autoscaling_client(aws.lambda_session())

    assert record_heartbeat(asc, "blue-nodes", "drain", token=token) == "recorded"
    assert action_state(aws, iid)["heartbeats"] == 1
    assert complete_lifecycle_action(asc, "blue-nodes", "drain", "CONTINUE", token=token) == "completed"
    assert complete_lifecycle_action(asc, "blue-nodes", "drain", "CONTINUE", token=token) == "already-done"
    assert complete_lifecycle_action(asc, "blue-nodes", "drain", "CONTINUE", instance_id=iid) == "already-done"
    assert record_heartbeat(asc, "blue-nodes", "drain", instance_id=iid) == "already-done"
    assert action_state(aws, iid)["state"] == "COMPLETED"

    hook = describe_hook(asc, "blue-nodes", "drain")
    assert hook is not None and (hook.heartbeat_timeout, hook.default_result) == (300, "ABANDON")
    assert hook.global_timeout == 100 * 300  # smaller than 48 h
    assert describe_hook(asc, "blue-nodes", "no-such-hook") is None
    event = parse_event(
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="blue-nodes", hook="drain", token=token)
    )
    assert isinstance(event, Interruption)
    assert with_hook_deadline(event, asc).deadline == event.event_time + 30000


def test_9b_completion_by_instance_id_when_the_event_has_no_token(testbed: Any, aws: Any) -> None:
    grant(testbed, aws, "blue")
    [iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    aws.start_lifecycle_action("blue-nodes", "drain", iid)
    raw = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="blue-nodes", hook="drain", token=None)
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))
    [first] = product.process(raw)
    [again] = product.process(raw)  # an at-least-once redelivery
    assert (first.lifecycle, again.lifecycle) == ("completed", "already-done")
    assert action_state(aws, iid)["state"] == "COMPLETED"


def test_10_health_event_with_instances_of_two_clusters_and_an_unknown_one(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    [blue_iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    [green_iid] = aws.asg("green-nodes", size=1, tags={"kubernetes.io/cluster/green": "owned"})
    [blue_node] = aws.nodes_for(k8s, [blue_iid])
    product = Product(aws.lambda_session(), settings(CLUSTER_NAMES="blue"))
    calls: list[list[str]] = []
    product.ec2.meta.events.register(
        "provide-client-params.ec2.DescribeInstances",
        lambda params, **_: calls.append(list(params["InstanceIds"])),
    )

    outcomes = product.process(samples.health_event([blue_iid, green_iid, IMPOSSIBLE]))

    by_id = {o.decision.instance_id: o.decision for o in outcomes}
    assert [o.decision.instance_id for o in outcomes] == [blue_iid, green_iid, IMPOSSIBLE]
    assert (by_id[blue_iid].owned, by_id[blue_iid].node, by_id[blue_iid].action) == (True, blue_node, "drain")
    assert (by_id[green_iid].reason, by_id[green_iid].cluster) == (Reason.OTHER_CLUSTER, "green")
    assert by_id[IMPOSSIBLE].reason == Reason.UNKNOWN_INSTANCE
    # one call for all instances; EC2 rejects the whole call for the unknown id, so one retry without it
    assert calls == [[blue_iid, green_iid, IMPOSSIBLE], [blue_iid, green_iid]]
    assert all(o.lifecycle == "not-applicable" for o in outcomes)

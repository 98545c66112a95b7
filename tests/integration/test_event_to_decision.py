"""Ownership and lifecycle-hook decisions, each event run through the real Lambda handler (durable local runner)
against moto server (with the lifecycle-action extension) and the real apiserver, reached through the EKS token
webhook with the Lambda's assumed-role credentials and the shipped RBAC.

Checks about one adapter on its own (the Auto Scaling calls, the per-cluster connector) call it directly."""

from __future__ import annotations

import time
from typing import Any

import pytest

from drain_orchestrator import deadlines
from drain_orchestrator.aws import clients
from drain_orchestrator.aws.autoscaling import (
    complete_lifecycle_action,
    describe_hook,
    group_memberships,
    record_heartbeat,
)
from drain_orchestrator.aws.eks_auth import ClusterDescriber, TokenSource
from drain_orchestrator.aws.errors import AwsError
from drain_orchestrator.events import parse_event
from drain_orchestrator.failures import FailureKind
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.kube.client import ClusterConnector
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.workflow_settings import WorkflowSettings
from testbed import samples
from testbed.aws_seed import LAUNCHING, AwsSeed
from testbed.bed import Testbed
from testbed.faultproxy import FaultProxy
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness, Run
from tests.integration.ownership_support import ROLE, action_state, grant

pytestmark = pytest.mark.integration

IMPOSSIBLE = "i-0000000000000dead"
BLUE = {"kubernetes.io/cluster/blue": "owned"}


def _terminate(aws: AwsSeed, asg: str, instance_id: str, hook: str = "drain") -> dict[str, Any]:
    token = aws.start_lifecycle_action(asg, hook, instance_id)
    return samples.lifecycle_event("asg-terminate.json", instance_id=instance_id, asg=asg, hook=hook, token=token)


def _calls_to(testbed: Testbed, cluster: str) -> int:
    return len([a for a in testbed.authentications() if a.get("cluster") == cluster])


def _succeeded(run: Run) -> dict[str, Any]:
    assert run.status == "SUCCEEDED", run.error
    assert run.result is not None
    return run.result


def test_instance_of_another_cluster_is_left_alone_without_a_kubernetes_call(
    testbed: Testbed, aws: AwsSeed, lam: LambdaHarness
) -> None:
    [iid] = aws.asg("green-nodes", size=1, tags={"kubernetes.io/cluster/green": "owned"})
    event = _terminate(aws, "green-nodes", iid)
    lam.configure("blue")
    audited = len(testbed.authentications())  # the audit log spans the session: look at this test's part

    result = _succeeded(lam.run(event))

    assert result["instances"] == []
    [other] = result["not_acted_on"]
    assert (other["instance_id"], other["owned"], other["cluster"], other["reason"]) == (
        iid,
        False,
        "green",
        "other-cluster",
    )
    assert action_state(aws, iid)["state"] == "ACTIVE"  # untouched: the owner completes it
    assert testbed.authentications()[audited:] == []  # not even a Kubernetes call


def test_owned_instance_without_a_node_completes_the_hook_with_continue_and_drains_nothing(
    testbed: Testbed, aws: AwsSeed, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    [iid] = aws.asg("blue-nodes", size=1, tags=BLUE)
    event = _terminate(aws, "blue-nodes", iid)
    lam.configure("blue")
    audited = len(testbed.authentications())

    run = lam.run(event)

    [inst] = _succeeded(run)["instances"]
    assert (inst["instance_id"], inst["cluster"], inst["node"]) == (iid, "blue", None)
    assert (inst["decision"], inst["action"]) == ("no-node", "complete-lifecycle")
    assert inst["lifecycle"] == {"outcome": "completed", "result": "CONTINUE"}
    assert "result" not in inst and "report" not in inst and "cordoned" not in inst  # nothing was drained
    action = action_state(aws, iid)
    assert (action["state"], action["result"], action["completed_with"]) == ("COMPLETED", "CONTINUE", "token")
    assert action["completed_by"] == aws.role_arn(ROLE)
    assert run.metric_total("EventsIgnored", reason="no-node", kind="asg-terminate") == 1
    assert run.metric_total("LifecycleActionsCompleted", cluster="blue") == 1
    assert run.metric_total("NodesDrained") == 0
    # the node lookup really went to the apiserver with the Lambda's role, and was allowed
    calls = testbed.authentications()[audited:]
    assert calls and all(c["allowed"] for c in calls)
    assert {c["arn"] for c in calls} == {aws.role_arn(ROLE)}


def test_instance_unknown_to_ec2_is_skipped_and_no_hook_is_touched(
    testbed: Testbed, aws: AwsSeed, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    [iid] = aws.asg("blue-nodes", size=1, tags=BLUE)
    aws.start_lifecycle_action("blue-nodes", "drain", iid)
    lam.configure("blue")
    audited = len(testbed.authentications())

    terminate = samples.lifecycle_event(
        "asg-terminate.json", instance_id=IMPOSSIBLE, asg="blue-nodes", hook="drain", token=None
    )
    result = _succeeded(lam.run(terminate))
    assert result["instances"] == []
    assert [(d["instance_id"], d["reason"]) for d in result["not_acted_on"]] == [(IMPOSSIBLE, "unknown-instance")]
    assert action_state(aws, iid)["state"] == "ACTIVE"  # the group's real action is not this event's

    spot = _succeeded(lam.run(samples.ec2_event("spot-interruption-terminate.json", instance_id=IMPOSSIBLE)))
    assert spot["instances"] == []
    assert [(d["instance_id"], d["reason"]) for d in spot["not_acted_on"]] == [(IMPOSSIBLE, "unknown-instance")]
    assert testbed.authentications()[audited:] == []


def test_one_deployment_routes_each_event_to_its_own_cluster(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    aws.eks_cluster("green")
    [blue_iid] = aws.asg("blue-nodes", size=1, tags=BLUE)
    [green_iid] = aws.asg("green-nodes", size=1, tags={"eks:cluster-name": "green"}, az="us-east-1b")
    [blue_node] = aws.nodes_for(k8s, [blue_iid])
    [green_node] = aws.nodes_for(k8s, [green_iid])
    lam.configure("blue,green", REBALANCE_RETURN_SECONDS="0")  # green's cordon stays for the assertions
    before_blue, before_green = _calls_to(testbed, "blue"), _calls_to(testbed, "green")

    blue = _succeeded(lam.run(samples.ec2_event("spot-interruption-terminate.json", instance_id=blue_iid)))
    [inst] = blue["instances"]
    assert (inst["cluster"], inst["node"], inst["action"], inst["result"]) == ("blue", blue_node, "drain", "drained")
    assert _calls_to(testbed, "blue") > before_blue
    assert _calls_to(testbed, "green") == before_green
    assert k8s.core.read_node(blue_node).spec.unschedulable is True
    assert not k8s.core.read_node(green_node).spec.unschedulable

    green = _succeeded(lam.run(samples.ec2_event("rebalance-recommendation.json", instance_id=green_iid)))
    [inst] = green["instances"]
    assert (inst["cluster"], inst["node"], inst["action"], inst["result"]) == (
        "green",
        green_node,
        "cordon",
        "cordoned",
    )
    assert _calls_to(testbed, "green") > before_green
    assert k8s.core.read_node(green_node).spec.unschedulable is True


def test_connector_keeps_one_connection_and_one_token_per_cluster(testbed: Testbed, aws: AwsSeed) -> None:
    grant(testbed, aws, "blue")
    grant(testbed, aws, "green")
    session = aws.lambda_session()
    connector = ClusterConnector(ClusterDescriber(clients.eks_client(session)), TokenSource(session))

    blue = connector.connection("blue")
    green = connector.connection("green")

    assert connector.connection("blue") is blue and connector.connection("green") is green
    assert blue is not green
    for connection in (blue, green, connector.connection("blue"), connector.connection("green")):
        assert Kube(connection=connection).request("GET", "/version").ok
    assert connector.tokens.generated == 2  # minted at the first request of each, then cached


def test_ownership_from_the_asg_tags_alone(testbed: Testbed, aws: AwsSeed, lam: LambdaHarness) -> None:
    aws.eks_cluster("blue")
    [iid] = aws.asg("blue-nodes", size=1, tags=BLUE, propagate=False)
    assert not any(t["Key"].startswith("kubernetes.io/") for t in aws.describe(iid).get("Tags", []))
    event = _terminate(aws, "blue-nodes", iid)
    lam.configure("blue")

    [inst] = _succeeded(lam.run(event))["instances"]

    assert inst["cluster"] == "blue"  # owned through the ASG ...
    assert inst["decision"] == "no-node"  # ... and no node joined
    assert inst["lifecycle"]["outcome"] == "completed"
    assert action_state(aws, iid)["state"] == "COMPLETED"


def test_asg_tag_ownership_drains_the_node_then_completes_the_hook(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    [iid] = aws.asg("blue-nodes", size=1, tags={"eks:cluster-name": "blue"}, propagate=False)
    [node] = aws.nodes_for(k8s, [iid])
    event = _terminate(aws, "blue-nodes", iid)
    lam.configure("blue")

    [inst] = _succeeded(lam.run(event))["instances"]

    assert (inst["decision"], inst["node"], inst["action"], inst["result"]) == (
        "owned-asg-tag",
        node,
        "drain",
        "drained",
    )
    assert inst["lifecycle"] == {"outcome": "completed", "result": "CONTINUE"}  # after the drain, not before
    assert k8s.core.read_node(node).spec.unschedulable is True
    assert (action_state(aws, iid)["state"], action_state(aws, iid)["result"]) == ("COMPLETED", "CONTINUE")


def test_tag_values_that_do_not_count_leave_the_instance_alone(
    testbed: Testbed, aws: AwsSeed, lam: LambdaHarness
) -> None:
    [iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "yes"})
    event = _terminate(aws, "blue-nodes", iid)
    lam.configure("blue")
    result = _succeeded(lam.run(event))
    assert result["instances"] == []
    [other] = result["not_acted_on"]
    assert (other["owned"], other["reason"]) == (False, "tag-value-mismatch")
    assert action_state(aws, iid)["state"] == "ACTIVE"

    marked = aws.instance(tags={"drain-orchestrator": "off"})
    lam.configure("blue", OWNERSHIP_TAG="drain-orchestrator=on")
    custom = _succeeded(lam.run(samples.ec2_event("state-change-stopping.json", instance_id=marked)))
    assert custom["instances"] == []
    [other] = custom["not_acted_on"]
    assert (other["instance_id"], other["owned"], other["reason"]) == (marked, False, "tag-value-mismatch")


def test_node_named_by_its_instance_id_is_found_and_drained(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags={"eks:cluster-name": "blue"})
    [node] = aws.nodes_for(k8s, [iid], by="id")
    assert node == iid
    lam.configure("blue")
    aws.stop_instance(iid)

    [inst] = _succeeded(lam.run(samples.ec2_event("state-change-stopping.json", instance_id=iid)))["instances"]

    assert (inst["decision"], inst["node"], inst["action"], inst["result"]) == (
        "owned-instance-tag",
        iid,
        "drain",
        "drained",
    )
    assert k8s.core.read_node(iid).spec.unschedulable is True


def test_autoscaling_adapter_counts_an_inactive_action_as_done_and_applies_the_global_timeout_rule(
    testbed: Testbed, aws: AwsSeed
) -> None:
    [iid] = aws.asg("blue-nodes", size=1, tags=BLUE)
    token = aws.start_lifecycle_action("blue-nodes", "drain", iid)
    asc = clients.autoscaling_client(aws.lambda_session())

    assert record_heartbeat(asc, "blue-nodes", "drain", token=token) == "recorded"
    assert action_state(aws, iid)["heartbeats"] == 1
    assert complete_lifecycle_action(asc, "blue-nodes", "drain", "CONTINUE", token=token) == "completed"
    assert complete_lifecycle_action(asc, "blue-nodes", "drain", "CONTINUE", token=token) == "already-done"
    assert complete_lifecycle_action(asc, "blue-nodes", "drain", "CONTINUE", instance_id=iid) == "already-done"
    assert record_heartbeat(asc, "blue-nodes", "drain", instance_id=iid) == "already-done"
    assert action_state(aws, iid)["state"] == "COMPLETED"

    hook = describe_hook(asc, "blue-nodes", "drain")
    assert hook is not None and (hook.heartbeat_timeout, hook.default_result) == (300, "ABANDON")
    assert hook.global_timeout == 100 * 300  # what AWS reports (and computes) for a 300 s heartbeat timeout
    assert describe_hook(asc, "blue-nodes", "no-such-hook") is None
    event = parse_event(
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="blue-nodes", hook="drain", token=token)
    )
    assert isinstance(event, Interruption)
    ws = WorkflowSettings.from_env({})
    assert deadlines.drain_deadline(event, ws, hook.global_timeout) == event.event_time + 30000


def test_autoscaling_adapter_types_a_deleted_group_a_refusal_and_a_bad_request_by_asking_aws(
    testbed: Testbed, aws: AwsSeed, aws_faults: FaultProxy
) -> None:
    """A ValidationError is "group gone" only when DescribeAutoScalingGroups no longer knows the group; otherwise it
    stays a bad request (INVALID). AccessDenied is FORBIDDEN. No message text is read but AWS's one signal for an
    inactive action."""
    [iid] = aws.asg("blue-nodes", size=1, tags=BLUE)
    aws.start_lifecycle_action("blue-nodes", "drain", iid)
    asc = clients.autoscaling_client(aws.lambda_session())
    with pytest.raises(AwsError) as refused:
        complete_lifecycle_action(asc, "blue-nodes", "drain", "MAYBE", instance_id=iid)  # type: ignore[arg-type]
    assert (refused.value.kind, refused.value.code) == (FailureKind.INVALID, "ValidationError")
    assert group_memberships(asc, [iid])[iid].lifecycle_state == "Terminating:Wait"

    through = aws.lambda_session().client("autoscaling", endpoint_url=aws_faults.url)
    aws_faults.inject("validation", ["RecordLifecycleActionHeartbeat"], times=1)
    with pytest.raises(AwsError) as invalid:  # the group is there: a request refused as such, not a gone group
        record_heartbeat(through, "blue-nodes", "drain", instance_id=iid)
    assert invalid.value.kind is FailureKind.INVALID

    policy = {"Effect": "Allow", "Action": "autoscaling:*", "Resource": "*",
              "Condition": {"StringEquals": {"autoscaling:ResourceTag/team": ["infra"]}}}  # fmt: skip
    aws.enforce_iam(ROLE, [{"name": "p", "policy": {"Version": "2012-10-17", "Statement": [policy]}}])
    with pytest.raises(AwsError) as denied:
        record_heartbeat(asc, "blue-nodes", "drain", instance_id=iid)
    assert (denied.value.kind, denied.value.code) == (FailureKind.FORBIDDEN, "AccessDenied")
    aws.enforce_iam(ROLE, [])

    aws.client("autoscaling").delete_auto_scaling_group(AutoScalingGroupName="blue-nodes", ForceDelete=True)
    assert record_heartbeat(asc, "blue-nodes", "drain", instance_id=iid) == "group-gone"
    assert complete_lifecycle_action(asc, "blue-nodes", "drain", "ABANDON", instance_id=iid) == "group-gone"
    assert group_memberships(asc, [iid]) == {}


def test_event_without_token_completes_by_instance_id_and_a_redelivery_counts_as_success(
    testbed: Testbed, aws: AwsSeed, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    [iid] = aws.asg("blue-nodes", size=1, tags=BLUE)
    aws.start_lifecycle_action("blue-nodes", "drain", iid)
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="blue-nodes", hook="drain", token=None)
    lam.configure("blue")

    [first] = _succeeded(lam.run(event))["instances"]
    action = action_state(aws, iid)
    assert (action["state"], action["result"], action["completed_with"]) == ("COMPLETED", "CONTINUE", "instance-id")
    assert action["completed_by"] == aws.role_arn(ROLE)

    assert aws.lifecycle_state(iid) == ("blue-nodes", "Terminating:Proceed")
    again = lam.run(event)  # an at-least-once redelivery: the action no longer waits, so nothing is acted on
    result = _succeeded(again)
    assert result["instances"] == []
    [declined] = result["not_acted_on"]
    assert (first["lifecycle"]["outcome"], declined["reason"], declined["owned"]) == (
        "completed",
        "action-not-pending",
        True,
    )
    assert again.metric_total("EventsIgnored", reason="action-not-pending", kind="asg-terminate") == 1
    assert again.metric_total("LifecycleActionsCompleted") == 0
    assert again.metric_total("Errors") == 0
    assert action_state(aws, iid)["completed_at"] == action["completed_at"]  # no second completion tried


def test_health_event_with_instances_of_two_clusters_and_an_unknown_one(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws.eks_cluster("blue")
    [blue_iid] = aws.asg("blue-nodes", size=1, tags=BLUE)
    [green_iid] = aws.asg("green-nodes", size=1, tags={"kubernetes.io/cluster/green": "owned"})
    [blue_node] = aws.nodes_for(k8s, [blue_iid])
    [green_node] = aws.nodes_for(k8s, [green_iid])
    lam.configure("blue")
    calls: list[tuple[str, list[str]]] = []

    def observed(build: Any) -> Any:
        def observed_client(*args: Any, **kwargs: Any) -> Any:
            """The function's own EC2 client, with its DescribeInstances calls recorded (they still go to moto)."""
            client = build(*args, **kwargs)
            client.meta.events.register(
                "provide-client-params.ec2.DescribeInstances",
                lambda params, **_: calls.append(
                    ("ids", list(params["InstanceIds"]))
                    if "InstanceIds" in params
                    else ("filter", [v for f in params["Filters"] for v in f["Values"]])
                ),
            )
            return client

        return observed_client

    # the decide step's first read is a single attempt (its own client), the rest through the usual one
    for name in ("ec2_client", "ec2_single_attempt_client"):
        monkeypatch.setattr(clients, name, observed(getattr(clients, name)))
    # a window that opens within the scheduled-change lead: the drain starts at once
    event = samples.health_event([blue_iid, green_iid, IMPOSSIBLE], start=time.time() + 600)

    result = _succeeded(lam.run(event))

    [inst] = result["instances"]
    assert (inst["instance_id"], inst["cluster"], inst["node"]) == (blue_iid, "blue", blue_node)
    assert (inst["action"], inst["result"]) == ("drain", "drained")
    assert [(d["instance_id"], d["reason"], d["cluster"]) for d in result["not_acted_on"]] == [
        (green_iid, "other-cluster", "green"),
        (IMPOSSIBLE, "unknown-instance", None),
    ]
    assert not k8s.core.read_node(green_node).spec.unschedulable
    # one call for all instances; EC2 rejects the whole call for the unknown id, so one query by instance-id
    # filter, which answers for the ids EC2 knows (no error, no message text read)
    ids = [blue_iid, green_iid, IMPOSSIBLE]
    # then the drained instance's return watch asks EC2 once whether it is still there (docs/drain.md "When the
    # instance stays")
    assert calls == [("ids", ids), ("filter", ids), ("ids", [blue_iid])]


def test_launch_into_the_warm_pool_completes_continue_without_waiting_for_a_node(
    testbed: Testbed, aws: AwsSeed, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    hooks = [{"name": "launch", "transition": LAUNCHING, "heartbeat_timeout": 300}]
    [iid] = aws.asg("blue-nodes", size=1, tags=BLUE, hooks=hooks)
    token = aws.start_lifecycle_action("blue-nodes", "launch", iid)
    event = samples.lifecycle_event("asg-launch.json", instance_id=iid, asg="blue-nodes", hook="launch", token=token)
    event["detail"]["Destination"] = "WarmPool"
    lam.configure("blue", LAUNCH_READY_TIMEOUT_SECONDS="120")
    audited = len(testbed.authentications())
    started = time.monotonic()

    run = lam.run(event, skip_time=False)  # real time: a wait for the node would show

    [inst] = _succeeded(run)["instances"]
    assert (inst["instance_id"], inst["cluster"], inst["action"]) == (iid, "blue", "complete-lifecycle")
    assert inst["lifecycle"] == {"outcome": "completed", "result": "CONTINUE"}
    assert "node" not in inst and "result" not in inst  # never looked for a node, never waited for one
    action = action_state(aws, iid)
    assert (action["state"], action["result"]) == ("COMPLETED", "CONTINUE")
    assert testbed.authentications()[audited:] == []  # no Kubernetes call at all
    assert time.monotonic() - started < 60  # far below the 120 s the ready wait would take

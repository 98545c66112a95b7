"""The synthesized IAM policy is sufficient and tight, checked against the AWS calls the function really makes.

A lifecycle drain long enough to send a heartbeat runs through the real handler on the bed; the emulator records
every call the function's role makes (action, resource ARN, the resource's tags: testbed/aws/calls.py). Each
call is evaluated offline by @cloud-copilot/iam-simulate (testbed/iam_simulate.mjs) against the role's
policy from the template the CDK app synthesizes for the served cluster: every call must be allowed, and the same
calls aimed at another cluster's Auto Scaling group or EKS cluster, or another SNS topic, must be denied.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from infra.execution_role import DURABLE_ACTIONS, LOG_ACTIONS

from drain_orchestrator.aws import reads_table
from testbed import samples
from testbed.aws.calls import AwsCall, read_calls
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.faultproxy import FaultProxy
from testbed.kube import KubeScenario
from testbed.load_balancers import target_group
from tests.iam_support import role_policies, simulate
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import relax_pdb_after

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}
LIFECYCLE = {"autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"}
# Granted for calls made with the function's role that the bed's AWS emulator does not see: the Lambda service's
# (writing the on-failure destination and the function's logs), and the durable SDK's checkpoints, which the bed's
# durable runner takes in-process (tests/infra/test_stack_iam.py checks their scope: this function, its log group).
SERVICE_SIDE = {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", *LOG_ACTIONS, *DURABLE_ACTIONS}
# Granted for the shared-reads table, which a drain uses only when EC2 throttles its DescribeInstances: each of them
# is made on the table, and on another, under the policy enforced by the emulator in test_shared_reads_table.py.
SHARED_READS = set(reads_table.ACTIONS)


def granted_actions(policies: list[dict[str, Any]]) -> set[str]:
    actions: set[str] = set()
    for policy in policies:
        for statement in policy["policy"]["Statement"]:
            action = statement["Action"]
            actions.update(action if isinstance(action, list) else [action])
    return actions


def elsewhere(call: AwsCall) -> AwsCall:
    """The same call aimed at what another cluster (or nobody) owns."""
    if call.action in LIFECYCLE:
        arn = call.resource.rsplit("/", 1)[0] + "/ng-green"
        return AwsCall(call.role_arn, call.action, arn, {"kubernetes.io/cluster/green": "owned"})
    if call.action == "eks:DescribeCluster":
        return AwsCall(call.role_arn, call.action, call.resource.rsplit("/", 1)[0] + "/green", {})
    if call.action == "sns:Publish":
        return AwsCall(call.role_arn, call.action, call.resource.rsplit(":", 1)[0] + ":someone-elses-topic", {})
    if call.action.startswith("dynamodb:"):
        return AwsCall(call.role_arn, call.action, call.resource.rsplit("/", 1)[0] + "/someone-elses-table", {})
    raise AssertionError(f"no resource-scoped variant of {call.action}")


def test_every_call_of_a_lifecycle_drain_is_allowed_and_other_clusters_resources_are_denied(
    testbed: Testbed,
    aws: AwsSeed,
    k8s: KubeScenario,
    lam: LambdaHarness,
    template: dict[str, Any],
    aws_faults: FaultProxy,
) -> None:
    """One drain that takes every path with an AWS call: the instance is untagged, so ownership comes from its
    group's tags (autoscaling:DescribeTags); a target group of the cluster exists, so the load-balancer gate lists,
    reads its tags and its targets; a PDB holds the drain past a heartbeat; the first heartbeat is refused with a
    ValidationError, so the function asks whether the group is gone (autoscaling:DescribeAutoScalingGroups)."""
    aws.eks_cluster("blue")
    hook = {"name": "drain", "transition": "autoscaling:EC2_INSTANCE_TERMINATING", "heartbeat_timeout": 30}
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED, hooks=[hook], propagate=False)
    target_group(aws, "tg-iam-blue")  # tagged for cluster blue; the instance is not registered in it
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on("web", 2, [node], spare, grace=1)
    k8s.pdb("web", {"app": "web"}, max_unavailable=0)
    k8s.wait_pdb("web", disruptions_allowed=0)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue", DRAIN_PASS_SECONDS="5", **aws_faults.env())
    aws_faults.inject("validation", ["RecordLifecycleActionHeartbeat"], times=1)
    role = aws.role_arn()
    before = len(read_calls(testbed.dir))
    relaxed = relax_pdb_after(k8s, "web", 20)  # past the 10 s heartbeat interval of a 30 s hook: a heartbeat
    run = lam.run(
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    )
    relaxed.outcome()
    assert run.status == "SUCCEEDED", run.error
    assert run.result["instances"][0]["result"] == "drained"

    calls = [c for c in read_calls(testbed.dir)[before:] if c.role_arn == role]
    actions = {c.action for c in calls}
    assert not [a for a in actions if a.startswith("unknown:")], actions
    assert {"ec2:DescribeInstances", "eks:DescribeCluster", "sns:Publish", *LIFECYCLE} <= actions, actions
    assert "autoscaling:DescribeTags" in actions  # the ownership-by-group path was taken
    assert "autoscaling:DescribeAutoScalingGroups" in actions  # and the refused heartbeat's
    assert all(200 <= c.status < 300 for c in calls), [c for c in calls if not 200 <= c.status < 300]
    (asg_call, *_) = [c for c in calls if c.action in LIFECYCLE]
    assert asg_call.tags == OWNED and ":autoScalingGroupName/ng-blue" in asg_call.resource

    policies = role_policies(template, os.environ["NOTIFICATION_TOPIC_ARN"])
    # least privilege both ways: nothing granted that this drain, which takes every path, never called
    assert granted_actions(policies) - actions - SERVICE_SIDE - SHARED_READS == set()
    distinct = list({(c.action, c.resource, json.dumps(c.tags, sort_keys=True)): c for c in calls}.values())
    verdicts = simulate(policies, distinct, role)
    assert dict(zip([(c.action, c.resource) for c in distinct], verdicts, strict=True)) == {
        (c.action, c.resource): "Allowed" for c in distinct
    }
    scoped = [elsewhere(c) for c in distinct if c.resource != "*"]
    assert {c.action for c in scoped} - SHARED_READS == {"eks:DescribeCluster", "sns:Publish", *LIFECYCLE}
    assert simulate(policies, scoped, role) == ["ImplicitlyDenied"] * len(scoped)

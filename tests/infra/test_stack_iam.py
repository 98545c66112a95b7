"""Template assertions for the function role's permissions (least privilege, scoped resources, lifecycle actions
conditioned on cluster tags, the load balancer gate's grants) and the EKS access entries that map it into each
cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
from infra.construct import KUBERNETES_GROUP

from tests.infra.conftest import RBAC_APPLIER_PREFIX, Synthesized
from tests.infra.stack_support import by_sid, logical_id, managed_policies, queue_arn, statements

DURABLE_POLICY = "service-role/AWSLambdaBasicDurableExecutionRolePolicy"


def arn_text(value: object) -> str:
    """A Fn::Join ARN flattened to text, pseudo parameters as <AWS::...>."""
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(arn_text(part) for part in value["Fn::Join"][1])
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    return str(value)


# --- IAM ----------------------------------------------------------------------------------------------------


def test_least_privilege_actions(single: Synthesized) -> None:
    actions: set[str] = set()
    for statement in statements(single):
        assert statement["Effect"] == "Allow"
        found = statement["Action"]
        actions.update([found] if isinstance(found, str) else found)
    assert actions == {
        "ec2:DescribeInstances",
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLifecycleHooks",
        "autoscaling:DescribeTags",
        "autoscaling:CompleteLifecycleAction",
        "autoscaling:RecordLifecycleActionHeartbeat",
        "eks:DescribeCluster",
        "elasticloadbalancing:DescribeTargetGroups",
        "elasticloadbalancing:DescribeTags",
        "elasticloadbalancing:DescribeTargetHealth",
        "sns:Publish",
        # the on-failure destination is written with the function's role
        "sqs:SendMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
        # Lambda writes the function's logs with its role; the durable SDK checkpoints and reads its state
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "lambda:CheckpointDurableExecution",
        "lambda:GetDurableExecutionState",
        # the shared-reads table (infra/shared_reads.py; tests/infra/test_shared_reads.py checks its scope)
        "dynamodb:BatchGetItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
    }
    assert not any("*" in action for action in actions)
    assert managed_policies(single) == []  # no AWS-managed durable policy: its grants are on `*`


DESCRIBE_ONLY = {
    "ec2:DescribeInstances",
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLifecycleHooks",
    "autoscaling:DescribeTags",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTags",
    "elasticloadbalancing:DescribeTargetHealth",
}


@pytest.mark.parametrize("config", ["single", "multi"])
def test_no_managed_durable_policy_and_no_star_resource_beyond_the_describe_calls(
    config: str, request: pytest.FixtureRequest
) -> None:
    synth: Synthesized = request.getfixturevalue(config)
    assert not [arn for arn in managed_policies(synth) if DURABLE_POLICY in arn]
    for statement in statements(synth):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if "*" in resources:
            assert set(actions) <= DESCRIBE_ONLY, statement  # those have no resource-level permissions


def test_durable_execution_and_log_grants_name_this_function_and_its_log_group(single: Synthesized) -> None:
    function = logical_id(single, "AWS::Lambda::Function", "DrainOrchestratorFunction")
    durable = next(s for s in statements(single) if "lambda:CheckpointDurableExecution" in s["Action"])
    assert sorted(durable["Action"]) == ["lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"]
    # durable execution ARNs are <function ARN>:<version>/durable-execution/...: every version of this function
    assert durable["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [function, "Arn"]}, ":*"]]}
    logs = next(s for s in statements(single) if "logs:PutLogEvents" in s["Action"])
    assert logs["Resource"] == {"Fn::GetAtt": [logical_id(single, "AWS::Logs::LogGroup", "LogGroup"), "Arn"]}
    # no execution before the durable grant exists: the published version (the alias's, the rules') waits for it
    policy = logical_id(single, "AWS::IAM::Policy", "DurableExecutionPolicy")
    (version,) = single.resources("AWS::Lambda::Version").values()
    assert policy in version["DependsOn"]


def test_scoped_resources(single: Synthesized) -> None:
    sids = by_sid(single)
    assert arn_text(sids["DescribeServedClusters"]["Resource"]) == (
        "arn:<AWS::Partition>:eks:<AWS::Region>:<AWS::AccountId>:cluster/prod"
    )
    publish = next(s for s in statements(single) if s["Action"] == "sns:Publish")
    assert publish["Resource"] == {"Ref": logical_id(single, "AWS::SNS::Topic", "NotificationTopic")}
    send = next(s for s in statements(single) if "sqs:SendMessage" in s["Action"])
    assert send["Resource"] == queue_arn(single, "FailedInvocationQueue")


def test_lifecycle_actions_conditioned_on_cluster_tags(single: Synthesized) -> None:
    sids = by_sid(single)
    tag = sids["LifecycleClusterTag0"]
    assert tag["Condition"] == {
        "StringEquals": {"autoscaling:ResourceTag/kubernetes.io/cluster/prod": ["owned", "shared"]}
    }
    assert sids["LifecycleEksClusterName"]["Condition"] == {
        "StringEquals": {"autoscaling:ResourceTag/eks:cluster-name": ["prod"]}
    }
    for sid in ("LifecycleClusterTag0", "LifecycleEksClusterName"):
        assert arn_text(sids[sid]["Resource"]).endswith(":autoScalingGroup:*:autoScalingGroupName/*")
        assert sorted(sids[sid]["Action"]) == [
            "autoscaling:CompleteLifecycleAction",
            "autoscaling:RecordLifecycleActionHeartbeat",
        ]


def test_multi_cluster_permissions(multi: Synthesized) -> None:
    sids = by_sid(multi)
    assert sorted(arn_text(r).rsplit("/", 1)[1] for r in sids["DescribeServedClusters"]["Resource"]) == [
        "batch",
        "prod",
        "staging",
    ]
    for index, cluster in enumerate(("prod", "staging", "batch")):
        condition = sids[f"LifecycleClusterTag{index}"]["Condition"]["StringEquals"]
        assert condition == {f"autoscaling:ResourceTag/kubernetes.io/cluster/{cluster}": ["owned", "shared"]}
        # scoped to the served ASG names as well
        assert [arn_text(r).rsplit("/", 1)[1] for r in sids[f"LifecycleClusterTag{index}"]["Resource"]] == [
            "prod-workers",
            "staging-workers",
            "batch-spot",
        ]
    assert sids["LifecycleEksClusterName"]["Condition"]["StringEquals"] == {
        "autoscaling:ResourceTag/eks:cluster-name": ["prod", "staging", "batch"]
    }


# --- cluster access -----------------------------------------------------------------------------------------


def test_access_entry_per_cluster(single: Synthesized, multi: Synthesized) -> None:
    role = logical_id(single, "AWS::IAM::Role", "ServiceRole")
    assert single.drainer("AWS::EKS::AccessEntry") == {
        "ClusterName": "prod",
        "PrincipalArn": {"Fn::GetAtt": [role, "Arn"]},
        "Type": "STANDARD",
        "KubernetesGroups": [KUBERNETES_GROUP],
    }
    entries = [e for k, e in multi.resources("AWS::EKS::AccessEntry").items() if not k.startswith(RBAC_APPLIER_PREFIX)]
    assert sorted(e["Properties"]["ClusterName"] for e in entries) == ["batch", "prod", "staging"]
    assert all(e["Properties"]["KubernetesGroups"] == ["drain-orchestrator"] for e in entries)


TG_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/by-hand/0123456789abcdef"


def test_load_balancer_gate_permissions(single: Synthesized, synth: Any) -> None:
    sids = by_sid(single)
    assert sids["DescribeTargetHealth"]["Resource"] == "*"  # ELBv2 Describe* support no resource-level scoping
    assert "DeregisterConfiguredTargets" not in sids
    by_hand = by_sid(synth({"clusters": "prod", "drainSettings": json.dumps({"TARGET_GROUP_ARNS": TG_ARN})}))
    assert by_hand["DeregisterConfiguredTargets"]["Action"] == "elasticloadbalancing:DeregisterTargets"
    assert by_hand["DeregisterConfiguredTargets"]["Resource"] == TG_ARN
    off = statements(synth({"clusters": "prod", "drainSettings": '{"WAIT_FOR_DEREGISTRATION": "never"}'}))
    assert not [s for s in off if "elasticloadbalancing" in json.dumps(s["Action"])]

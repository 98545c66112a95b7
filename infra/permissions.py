"""The function's IAM permissions: exactly the calls the product makes, scoped as tightly as IAM allows."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from .config import OrchestratorConfig

# Why `autoscaling:ResourceTag/...` and not `aws:ResourceTag/...`: the Service Authorization Reference lists
# `autoscaling:ResourceTag/${TagKey}` as the condition key of CompleteLifecycleAction and
# RecordLifecycleActionHeartbeat (resource type autoScalingGroup), and the Auto Scaling guide's "Tags for
# security" page uses it for actions on groups. It is evaluated against the group's tags.
# Hooks are no IAM resource and no condition key names them (CompleteLifecycleAction and
# RecordLifecycleActionHeartbeat authorize on the group only), so "only our hooks" cannot be an IAM condition:
# the lifecycle rules match only our hook names and the function answers no other (hook-not-ours).
ASG_TAG_CONDITION = "autoscaling:ResourceTag"
CLUSTER_TAG_VALUES = ["owned", "shared"]
LIFECYCLE_ACTIONS = ["autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"]
# hook timeouts (DescribeLifecycleHooks), an instance's ASG tags when its own do not decide (DescribeTags), whether a
# lifecycle action still waits in the event's group (DescribeAutoScalingInstances) and whether a group that answers
# a heartbeat with ValidationError is gone (DescribeAutoScalingGroups)
AUTOSCALING_DESCRIBE = [
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLifecycleHooks",
    "autoscaling:DescribeTags",
]


# The load-balancer gate's reads; ELBv2 Describe* calls support no resource-level permissions.
ELBV2_DESCRIBE = [
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTags",
    "elasticloadbalancing:DescribeTargetHealth",
]


def _asg_arns(config: OrchestratorConfig) -> list[str]:
    # The group id in an ASG ARN is a UUID unknown at synth time, hence the `*` in that position.
    prefix = f"arn:{cdk.Aws.PARTITION}:autoscaling:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:autoScalingGroup:*"
    names = config.served_asg_names or ("*",)
    return [f"{prefix}:autoScalingGroupName/{name}" for name in names]


def cluster_arn(name: str) -> str:
    return f"arn:{cdk.Aws.PARTITION}:eks:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:cluster/{name}"


def function_statements(config: OrchestratorConfig) -> list[iam.PolicyStatement]:
    """Statements added to the function's role (SNS publish and the SQS destination are granted where
    those resources are created)."""
    statements = [
        iam.PolicyStatement(
            sid="DescribeInstances",
            actions=["ec2:DescribeInstances"],
            resources=["*"],  # DescribeInstances supports no resource-level permissions
        ),
        iam.PolicyStatement(
            sid="DescribeAutoScaling",
            actions=AUTOSCALING_DESCRIBE,
            resources=["*"],  # Auto Scaling Describe* calls support no resource-level permissions
        ),
        iam.PolicyStatement(
            sid="DescribeServedClusters",
            actions=["eks:DescribeCluster"],
            resources=[cluster_arn(name) for name in config.clusters],
        ),
    ]
    # Conditions on different keys are ANDed, so each cluster tag key needs its own statement.
    for index, name in enumerate(config.clusters):
        statements.append(
            iam.PolicyStatement(
                sid=f"LifecycleClusterTag{index}",
                actions=LIFECYCLE_ACTIONS,
                resources=_asg_arns(config),
                conditions={"StringEquals": {f"{ASG_TAG_CONDITION}/kubernetes.io/cluster/{name}": CLUSTER_TAG_VALUES}},
            )
        )
    statements.append(
        iam.PolicyStatement(
            sid="LifecycleEksClusterName",
            actions=LIFECYCLE_ACTIONS,
            resources=_asg_arns(config),
            conditions={"StringEquals": {f"{ASG_TAG_CONDITION}/eks:cluster-name": list(config.clusters)}},
        )
    )
    if config.ownership_tag:
        # Ownership by OWNERSHIP_TAG on a group: its hooks must be answerable too (the function's rule is
        # drain_orchestrator.lifecycle_grant; tests/infra/test_lifecycle_grant.py compares the two). key=value
        # marks the one served cluster's groups, a key alone names the cluster in its value.
        key, _, value = config.ownership_tag.partition("=")
        values = [value] if value else list(config.clusters)
        statements.append(
            iam.PolicyStatement(
                sid="LifecycleOwnershipTag",
                actions=LIFECYCLE_ACTIONS,
                resources=_asg_arns(config),
                conditions={"StringEquals": {f"{ASG_TAG_CONDITION}/{key}": values}},
            )
        )
    statements.extend(_load_balancer_statements(config))
    return statements


def _load_balancer_statements(config: OrchestratorConfig) -> list[iam.PolicyStatement]:
    """Reads for the load-balancer gate unless it is off; DeregisterTargets only on the target groups configured
    by ARN (TARGET_GROUP_ARNS), the ones nobody else deregisters the instance from."""
    settings = dict(config.drain_settings)
    if settings.get("WAIT_FOR_DEREGISTRATION", "").strip().lower() in ("never", "false", "0", "no", "off"):
        return []
    out = [iam.PolicyStatement(sid="DescribeTargetHealth", actions=ELBV2_DESCRIBE, resources=["*"])]
    arns = [a.strip() for a in settings.get("TARGET_GROUP_ARNS", "").split(",") if a.strip()]
    if arns:
        out.append(
            iam.PolicyStatement(
                sid="DeregisterConfiguredTargets", actions=["elasticloadbalancing:DeregisterTargets"], resources=arns
            )
        )
    return out

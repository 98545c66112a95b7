"""cdk-nag (AwsSolutions) findings this construct deliberately accepts, each with its reason.

Kept as data so a test can check that every acknowledgement is still needed: one that matches no finding
any more is a stale exemption and must go.
"""

from __future__ import annotations

from .config import OrchestratorConfig

_IAM = "AwsSolutions::AwsSolutions-IAM"
_ASG_ARN = "arn:<AWS::Partition>:autoscaling:<AWS::Region>:<AWS::AccountId>:autoScalingGroup:*:autoScalingGroupName"
_MANAGED = "arn:<AWS::Partition>:iam::aws:policy/service-role"


def nag_acknowledgements(config: OrchestratorConfig) -> dict[str, str]:
    reasons = {
        "AwsSolutions::AwsSolutions-SQS3": (
            "Both queues are dead-letter queues themselves (EventBridge target DLQ and the Lambda on-failure "
            "destination); a DLQ for a DLQ would only move the problem."
        ),
        "AwsSolutions::AwsSolutions-L1": (
            "Python 3.13 is pinned by the project (requires-python and the uv lock the bundle is built "
            "from); durable functions support it. Moving to 3.14 is a deliberate lock change."
        ),
        f"{_IAM}4[Policy::{_MANAGED}/AWSLambdaBasicDurableExecutionRolePolicy]": (
            "AWS-managed policy required by durable functions (logs plus lambda:CheckpointDurableExecution "
            "and lambda:GetDurableExecutionState)."
        ),
        f"{_IAM}5[Resource::*]": (
            "ec2:DescribeInstances and autoscaling:DescribeAutoScalingGroups/DescribeLifecycleHooks/"
            "DescribeTags support no resource-level permissions; they are read-only."
        ),
    }
    if config.served_asg_names:
        for name in config.served_asg_names:
            reasons[f"{_IAM}5[Resource::{_ASG_ARN}/{name}]"] = (
                "The `*` stands for the Auto Scaling group's UUID, unknown at synth time; the group name is "
                "fixed and the call is further conditioned on the served cluster's tag."
            )
    else:
        reasons[f"{_IAM}5[Resource::{_ASG_ARN}/*]"] = (
            "Lifecycle calls on any Auto Scaling group are restricted by a condition to groups tagged for "
            "a served cluster (kubernetes.io/cluster/<name> or eks:cluster-name); asgNames narrows further."
        )
    if config.vpc is not None:
        reasons[f"{_IAM}4[Policy::{_MANAGED}/AWSLambdaVPCAccessExecutionRole]"] = (
            "AWS-managed policy Lambda needs to create and delete its network interfaces in the VPC."
        )
    return reasons

"""The deployable stack: one `DrainOrchestrator` configured from CDK context, and its outputs (`add_orchestrator`,
which the release's plain CloudFormation template builds on too: infra/release_template.py)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .config import OrchestratorConfig
from .construct import DrainOrchestrator

STACK_NAME = "DrainOrchestrator"
DESCRIPTION = "EKS Drain Orchestrator: drains EKS nodes before EC2 instances go away"


class DrainOrchestratorStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: OrchestratorConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, description=DESCRIPTION, **kwargs)
        self.orchestrator = add_orchestrator(self, config)


def add_orchestrator(
    stack: cdk.Stack, config: OrchestratorConfig, code: lambda_.Code | None = None
) -> DrainOrchestrator:
    """The construct and the stack's outputs (``code``: the construct's own, bundled here, by default)."""
    orchestrator = DrainOrchestrator(stack, "DrainOrchestrator", config=config, code=code)
    cdk.CfnOutput(stack, "FunctionAliasArn", value=orchestrator.alias.function_arn)
    cdk.CfnOutput(stack, "FunctionRoleArn", value=orchestrator.role_arn)
    cdk.CfnOutput(stack, "NotificationTopicArn", value=orchestrator.notification_topic.topic_arn)
    cdk.CfnOutput(stack, "AlarmTopicArn", value=orchestrator.alarm_topic.topic_arn)
    cdk.CfnOutput(stack, "DashboardName", value=orchestrator.observability.dashboard.dashboard_name)
    # what docs/runbook.md's commands start from
    cdk.CfnOutput(stack, "LogGroupName", value=orchestrator.log_group.log_group_name)
    cdk.CfnOutput(stack, "DeliveryDeadLetterQueueUrl", value=orchestrator.delivery_dead_letters.queue_url)
    cdk.CfnOutput(stack, "FailedInvocationQueueUrl", value=orchestrator.failed_invocations.queue_url)
    if orchestrator.security_groups:  # to allow in the cluster security group (docs/deploy.md)
        cdk.CfnOutput(
            stack,
            "FunctionSecurityGroupIds",
            value=",".join(group.security_group_id for group in orchestrator.security_groups),
        )
    return orchestrator

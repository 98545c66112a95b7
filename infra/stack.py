"""The deployable stack: one `DrainOrchestrator` configured from CDK context."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from .config import OrchestratorConfig
from .construct import DrainOrchestrator

STACK_NAME = "DrainOrchestrator"


class DrainOrchestratorStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: OrchestratorConfig, **kwargs: Any) -> None:
        super().__init__(
            scope,
            construct_id,
            description="EKS Drain Orchestrator: drains EKS nodes before EC2 instances go away",
            **kwargs,
        )
        self.orchestrator = DrainOrchestrator(self, "DrainOrchestrator", config=config)
        cdk.CfnOutput(self, "FunctionAliasArn", value=self.orchestrator.alias.function_arn)
        cdk.CfnOutput(self, "FunctionRoleArn", value=self.orchestrator.role_arn)
        cdk.CfnOutput(self, "NotificationTopicArn", value=self.orchestrator.notification_topic.topic_arn)
        cdk.CfnOutput(self, "AlarmTopicArn", value=self.orchestrator.alarm_topic.topic_arn)
        cdk.CfnOutput(self, "DashboardName", value=self.orchestrator.observability.dashboard.dashboard_name)
        # what docs/runbook.md's commands start from
        cdk.CfnOutput(self, "LogGroupName", value=self.orchestrator.log_group.log_group_name)
        cdk.CfnOutput(self, "DeliveryDeadLetterQueueUrl", value=self.orchestrator.delivery_dead_letters.queue_url)
        cdk.CfnOutput(self, "FailedInvocationQueueUrl", value=self.orchestrator.failed_invocations.queue_url)
        if self.orchestrator.security_groups:  # to allow in the cluster security group (docs/deploy.md)
            cdk.CfnOutput(
                self,
                "FunctionSecurityGroupIds",
                value=",".join(group.security_group_id for group in self.orchestrator.security_groups),
            )

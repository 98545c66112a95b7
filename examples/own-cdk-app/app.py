"""A platform team's own CDK app that adds EKS Drain Orchestrator to one of its stacks.

The EKS cluster and its node groups live in other stacks (or other tools): they are referenced by name only.
Install the construct from this repository's wheel (`make package`, then
`pip install dist/drain_orchestrator_cdk-*.whl cdk-nag`) and run `cdk synth` here (cdk.json runs `python app.py`).
Names come from context, e.g.
`cdk synth -c cluster=prod-eu -c nodeGroupAsgs=eks-general-1a2b,eks-spot-3c4d -c alarmEmail=oncall@example.com`.
"""

from __future__ import annotations

import importlib.metadata

import aws_cdk as cdk
import cdk_nag
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct
from drain_orchestrator_cdk import DrainOrchestrator, OrchestratorConfig


class NodeLifecycleStack(cdk.Stack):
    """The team's stack for node lifecycle tooling; the orchestrator is one part of it."""

    def __init__(
        self, scope: Construct, construct_id: str, *, cluster: str, asgs: tuple[str, ...], alarm_email: str | None
    ) -> None:
        super().__init__(scope, construct_id, description="Node lifecycle tooling for the platform's EKS clusters")
        self.orchestrator = DrainOrchestrator(
            self,
            "DrainOrchestrator",
            config=OrchestratorConfig(
                clusters=(cluster,),
                # the managed node groups' ASGs: scope the lifecycle rules and IAM to them, and put a hook on each
                asg_names=asgs,
                create_lifecycle_hooks=asgs,
                heartbeat_timeout_seconds=600,
                alarm_email=alarm_email,
                # checked at synth by the function's own settings code; a drain held past its notice waits for
                # an operator's decision (`drain-orchestrator approve`)
                drain_settings={"DRAIN_GRACE_PERIOD": 30, "HELD_APPROVAL": "on"},
            ),
        )
        # the team's own paging topic also gets the orchestrator's alarms
        paging = sns.Topic.from_topic_arn(
            self, "Paging", f"arn:{self.partition}:sns:{self.region}:{self.account}:platform-paging"
        )
        for alarm in self.orchestrator.alarms:
            alarm.add_alarm_action(cw_actions.SnsAction(paging))
        # the on-call engineers' role may answer those approvals (and nothing else of the function)
        on_call = iam.Role(self, "OnCall", assumed_by=iam.AccountRootPrincipal())
        self.orchestrator.grant_approve(on_call)
        cdk.CfnOutput(self, "DrainOrchestratorRoleArn", value=self.orchestrator.role_arn)


def add_compliance_checks(app: cdk.App) -> None:
    """cdk-nag's AwsSolutions rules; the construct's acknowledged findings are recorded for v2 and v3 alike."""
    if int(importlib.metadata.version("cdk-nag").split(".")[0]) >= 3:
        cdk.Validations.of(app).add_plugins(cdk_nag.AwsSolutionsChecks(app))  # v3: a policy-validation plugin
    else:
        cdk.Aspects.of(app).add(cdk_nag.AwsSolutionsChecks())  # v2: an aspect


def main() -> None:
    app = cdk.App()
    cluster = str(app.node.try_get_context("cluster") or "prod-eu")
    asgs = tuple(str(app.node.try_get_context("nodeGroupAsgs") or "eks-general-1a2b3c,eks-spot-4d5e6f").split(","))
    alarm_email = app.node.try_get_context("alarmEmail")
    NodeLifecycleStack(app, "NodeLifecycle", cluster=cluster, asgs=asgs, alarm_email=alarm_email)
    add_compliance_checks(app)
    app.synth()


if __name__ == "__main__":
    main()

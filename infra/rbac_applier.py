"""The Kubernetes RBAC and flow schema with the deploy: one custom resource per served cluster, answered by a small
function of its own (`drain_orchestrator.rbac_resource.handler`, the same code asset as the drain function), so one
`cdk deploy` applies them, a deploy that changes them applies them again and `cdk destroy` removes them.

Writing RBAC needs cluster-admin rights (Kubernetes lets no one grant what they do not hold), which the drain
function must never have: the applier is another function with its own role, whose access entry carries
AmazonEKSClusterAdminPolicy. Only CloudFormation (with the deployer's credentials) and principals allowed to invoke it
call it, and it applies nothing but the manifests of its own code asset. The resource depends on that access entry,
so `cdk destroy` removes the objects before the entry goes.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from . import bundle
from .network import Network
from .permissions import cluster_arn

HANDLER = "drain_orchestrator.rbac_resource.handler"
RESOURCE_TYPE = "Custom::DrainOrchestratorRbac"
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
TIMEOUT = cdk.Duration.minutes(5)  # an apply takes seconds; the rest is waiting for a new access entry
# CloudFormation gives up on an answer that never comes after this, not after its default hour
SERVICE_TIMEOUT = cdk.Duration.minutes(7)


class RbacApplier(Construct):
    """`function`, `role`, and per cluster `access_entries[cluster]` and `resources[cluster]`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        clusters: Sequence[str],
        code: lambda_.Code,
        log_group: logs.ILogGroup,
        network: Network | None,
        surge: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="EKS Drain Orchestrator: applies the Kubernetes RBAC on the served clusters at deploy time",
            inline_policies={
                "ApplyRbac": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            sid="DescribeServedClusters",
                            actions=["eks:DescribeCluster"],
                            resources=[cluster_arn(name) for name in clusters],
                        ),
                        iam.PolicyStatement(  # the log group's ARN attribute already ends in :* (its streams)
                            sid="WriteLogs",
                            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                            resources=[log_group.log_group_arn],
                        ),
                    ]
                )
            },
        )
        if network is not None:
            self.role.add_managed_policy(
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSLambdaVPCAccessExecutionRole")
            )
        self.function = lambda_.Function(
            self,
            "Function",
            description="EKS Drain Orchestrator: applies the Kubernetes RBAC and flow schema (CloudFormation)",
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.ARM_64,
            handler=HANDLER,
            code=code,
            role=self.role,
            memory_size=256,
            timeout=TIMEOUT,
            logging_format=lambda_.LoggingFormat.JSON,
            log_group=log_group,
            vpc=network.vpc if network else None,
            vpc_subnets=network.subnets if network else None,
            security_groups=network.security_groups if network else None,
        )
        # CDK also makes the function DependsOn its role, which Properties.Role already references (cfn-lint W3005);
        # the role's policies are inline: nothing else to wait for
        function_resource = self.function.node.default_child
        assert isinstance(function_resource, cdk.CfnResource)
        function_resource.add_deletion_override("DependsOn")
        digest = bundle.manifests_digest()
        self.access_entries: dict[str, eks.CfnAccessEntry] = {}
        self.resources: dict[str, cdk.CustomResource] = {}
        for cluster in clusters:
            entry = eks.CfnAccessEntry(
                self,
                f"AccessEntry-{cluster}",
                cluster_name=cluster,
                principal_arn=self.role.role_arn,
                type="STANDARD",
                access_policies=[
                    eks.CfnAccessEntry.AccessPolicyProperty(
                        policy_arn=f"arn:{cdk.Aws.PARTITION}:eks::aws:cluster-access-policy/{CLUSTER_ADMIN_POLICY}",
                        access_scope=eks.CfnAccessEntry.AccessScopeProperty(type="cluster"),
                    )
                ],
            )
            resource = cdk.CustomResource(
                self,
                f"Applied-{cluster}",
                service_token=self.function.function_arn,
                resource_type=RESOURCE_TYPE,
                service_timeout=SERVICE_TIMEOUT,
                # the manifests' digest: a release that changes them updates the resource, which applies them again;
                # Surge: surge before evict's rights too (rbac-surge.yaml), or not (an update removes them)
                properties={"ClusterName": cluster, "ManifestsSha256": digest, "Surge": "true" if surge else "false"},
            )
            resource.node.add_dependency(entry)
            self.access_entries[cluster] = entry
            self.resources[cluster] = resource

    @property
    def connections(self) -> ec2.Connections:
        return self.function.connections

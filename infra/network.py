"""Where the function runs: no VPC, a VPC given by ids (CDK context / `VpcPlacement`), or the app's own `IVpc`,
subnets and security groups (construct props)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from .config import VpcPlacement
from .validation import prop_error

# Imported subnets without a route table id warn that `.routeTable` would be undefined; the construct never reads
# it, so the user could do nothing about the warning.
NO_ROUTE_TABLE_WARNING = "@aws-cdk/aws-ec2:noSubnetRouteTableId"
# The VPC imported by id has a token for its AZs (the deploy Region's); it would matter only to constructs that
# select subnets from the VPC at synth time, and the function gets its subnets explicitly.
AZ_LIST_ATTRIBUTE_WARNING = "@aws-cdk/aws-ec2:vpcAttributeIsListTokenavailabilityZones"


@dataclass(frozen=True)
class Network:
    vpc: ec2.IVpc
    subnets: ec2.SubnetSelection | None  # None: CDK's default (the VPC's private subnets)
    security_groups: list[ec2.ISecurityGroup]
    created_security_group: ec2.SecurityGroup | None


def resolve_network(
    scope: Construct,
    placement: VpcPlacement | None,
    *,
    vpc: ec2.IVpc | None,
    vpc_subnets: ec2.SubnetSelection | None,
    security_groups: Sequence[ec2.ISecurityGroup] | None,
) -> Network | None:
    if placement is not None and vpc is not None:
        raise prop_error(
            "vpc", "give either OrchestratorConfig.vpc (ids, as from CDK context) or the vpc prop, not both"
        )
    if vpc is None and placement is None:
        if vpc_subnets is not None:
            raise prop_error("vpc_subnets", "needs the vpc prop")
        if security_groups:
            raise prop_error("security_groups", "needs the vpc prop")
        return None
    if placement is not None:
        vpc = ec2.Vpc.from_vpc_attributes(scope, "Vpc", vpc_id=placement.vpc_id, availability_zones=cdk.Fn.get_azs())
        cdk.Annotations.of(vpc).acknowledge_warning(
            AZ_LIST_ATTRIBUTE_WARNING,
            "The function's subnets are given explicitly; nothing selects subnets from the VPC.",
        )
        subnets = []
        for subnet_id in placement.subnet_ids:
            subnet = ec2.Subnet.from_subnet_id(scope, f"Subnet-{subnet_id}", subnet_id)
            cdk.Annotations.of(subnet).acknowledge_warning(
                NO_ROUTE_TABLE_WARNING, "The function only runs in the subnet; its route table is never read."
            )
            subnets.append(subnet)
        vpc_subnets = ec2.SubnetSelection(subnets=subnets)
        security_groups = [
            ec2.SecurityGroup.from_security_group_id(scope, f"SecurityGroup-{group}", group)
            for group in placement.security_group_ids
        ]
    assert vpc is not None
    created = None
    if not security_groups:
        created = ec2.SecurityGroup(
            scope,
            "SecurityGroup",
            vpc=vpc,
            description="EKS Drain Orchestrator: egress to the EKS API and AWS endpoints",
            allow_all_outbound=True,
        )
        security_groups = [created]
    return Network(vpc, vpc_subnets, list(security_groups), created)

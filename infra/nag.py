"""cdk-nag (AwsSolutions) findings this construct deliberately accepts, each with its reason.

Kept as data so a test can check that every acknowledgement is still needed: one that matches no finding
any more is a stale exemption and must go. `acknowledge` records them for cdk-nag v3 and v2 alike.
"""

from __future__ import annotations

import importlib.metadata

import aws_cdk as cdk
from constructs import Construct

from .config import OrchestratorConfig
from .shared_reads import NAG_REASONS as SHARED_READS_REASONS

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
        f"{_IAM}5[Resource::*]": (
            "ec2:DescribeInstances and autoscaling:DescribeAutoScalingGroups/DescribeAutoScalingInstances/"
            "DescribeLifecycleHooks/DescribeTags support no resource-level permissions; they are read-only."
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
            "a served cluster (kubernetes.io/cluster/<name>, eks:cluster-name, or the ownershipTag); asgNames "
            "narrows further."
        )
    if config.shared_reads:
        reasons.update(SHARED_READS_REASONS)
    if config.vpc is not None:
        reasons[f"{_IAM}4[Policy::{_MANAGED}/AWSLambdaVPCAccessExecutionRole]"] = (
            "AWS-managed policy Lambda needs to create and delete its network interfaces in the VPC."
        )
    return reasons


def _cdk_nag_major() -> int | None:
    try:
        return int(importlib.metadata.version("cdk-nag").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def acknowledge(scope: Construct, config: OrchestratorConfig, more: dict[str, str] | None = None) -> None:
    """Record the acknowledgements where the installed cdk-nag reads them.

    cdk-nag v3 is a policy-validation plugin: it honours `Validations.of(scope).acknowledge` (aws-cdk-lib with the
    `Validations` API). cdk-nag v2 is an aspect that reads `cdk_nag.rules_to_suppress` from each resource's
    metadata, which is what its `NagSuppressions.add_resource_suppressions(..., apply_to_children=True)` writes;
    it is written only when cdk-nag 2.x is installed, so other apps' templates carry no extra metadata. Call after
    every resource of `scope` exists. ``more``: findings whose ids name the construct's own logical ids."""
    acknowledge_findings(scope, {**nag_acknowledgements(config), **(more or {})})


def acknowledge_findings(scope: Construct, reasons: dict[str, str]) -> None:
    """`reasons` (finding id -> why) on `scope` and every resource under it, for the installed cdk-nag: through
    `Validations` where aws-cdk-lib has it (older releases, down to the construct's declared minimum, do not), and
    as cdk-nag v2's resource metadata when v2 is installed, added to what a resource already suppresses (a grant
    on a team's role must not drop the team's own suppressions)."""
    validations = getattr(cdk, "Validations", None)
    if validations is not None:
        for finding, reason in reasons.items():
            validations.of(scope).acknowledge(cdk.Acknowledgment(id=finding, reason=reason))
    if _cdk_nag_major() == 2:
        suppressions = v2_suppressions(reasons)
        for child in scope.node.find_all():
            if isinstance(child, cdk.CfnResource):
                kept = (child.get_metadata("cdk_nag") or {}).get("rules_to_suppress") or []
                added = [s for s in suppressions if s not in kept]
                child.add_metadata("cdk_nag", {"rules_to_suppress": [*kept, *added]})


def v2_suppressions(reasons: dict[str, str]) -> list[dict[str, object]]:
    """`AwsSolutions::AwsSolutions-IAM5[Resource::*]` (v3 acknowledgement id) -> cdk-nag v2's
    `{"id": "AwsSolutions-IAM5", "applies_to": ["Resource::*"]}`, one entry per finding so each keeps its reason."""
    out: list[dict[str, object]] = []
    for finding, reason in reasons.items():
        rule_id, _, finding_id = finding.split("::", 1)[1].partition("[")
        entry: dict[str, object] = {"id": rule_id, "reason": reason}
        if finding_id:
            entry["applies_to"] = [finding_id.removesuffix("]")]
        out.append(entry)
    return out

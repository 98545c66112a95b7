"""The combination docs/deploy.md shows for keeping a failed drain's instance: an ASG whose instance lifecycle
policy retains on an abandoned terminate hook, the construct's hook on it, and LIFECYCLE_RESULT_ON_FAILURE=ABANDON.
It synthesizes with the aws-cdk-lib we pin, says what the docs say, and passes cfn-lint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cfnlint.api import ManualArgs, lint
from infra.construct import HANDLER

ASG = "prod-nodes"
RETAIN = {"RetentionTriggers": {"TerminateHookAbandon": "retain"}}


def _synth(outdir: Path, *, l1: bool) -> dict[str, Any]:
    import aws_cdk as cdk
    from aws_cdk import aws_autoscaling as autoscaling
    from aws_cdk import aws_ec2 as ec2
    from infra.config import config_from_mapping
    from infra.construct import DrainOrchestrator

    app = cdk.App(context={"aws:cdk:bundling-stacks": []}, outdir=str(outdir))
    stack = cdk.Stack(app, "Platform", env=cdk.Environment(account="123456789012", region="us-east-1"))
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
    nodes = autoscaling.AutoScalingGroup(
        stack,
        "Nodes",
        auto_scaling_group_name=ASG,
        vpc=vpc,
        instance_type=ec2.InstanceType("m5.large"),
        machine_image=ec2.MachineImage.latest_amazon_linux2023(),
        # as in docs/deploy.md: the L2 prop, or the property on the CfnAutoScalingGroup
        instance_lifecycle_policy=None
        if l1
        else autoscaling.InstanceLifecyclePolicy(
            retention_triggers=autoscaling.RetentionTriggers(
                terminate_hook_abandon=autoscaling.TerminateHookAbandonAction.RETAIN,
            ),
        ),
    )
    if l1:
        cfn_group = nodes.node.default_child
        assert isinstance(cfn_group, autoscaling.CfnAutoScalingGroup)
        cfn_group.instance_lifecycle_policy = autoscaling.CfnAutoScalingGroup.InstanceLifecyclePolicyProperty(
            retention_triggers=autoscaling.CfnAutoScalingGroup.RetentionTriggersProperty(
                terminate_hook_abandon="retain"
            ),
        )
    config = config_from_mapping(
        {
            "clusters": "prod",
            "createLifecycleHooks": ASG,
            "drainSettings": json.dumps({"LIFECYCLE_RESULT_ON_FAILURE": "ABANDON"}),
        }
    )
    DrainOrchestrator(stack, "Drainer", config=config)
    assembly = app.synth()
    template: dict[str, Any] = json.loads(Path(assembly.get_stack_by_name("Platform").template_full_path).read_text())
    return template


def _of_type(template: dict[str, Any], type_name: str) -> list[dict[str, Any]]:
    return [r.get("Properties", {}) for r in template["Resources"].values() if r["Type"] == type_name]


def test_retaining_group_with_abandon_on_failure_synthesizes_as_documented(tmp_path: Path) -> None:
    for l1 in (False, True):
        template = _synth(tmp_path / ("l1" if l1 else "l2"), l1=l1)
        (group,) = _of_type(template, "AWS::AutoScaling::AutoScalingGroup")
        assert group["InstanceLifecyclePolicy"] == RETAIN
        (hook,) = _of_type(template, "AWS::AutoScaling::LifecycleHook")
        assert (hook["AutoScalingGroupName"], hook["LifecycleTransition"]) == (
            ASG,
            "autoscaling:EC2_INSTANCE_TERMINATING",
        )
        # a hook nobody answered still lets the instance go: only the function's ABANDON retains it
        assert hook["DefaultResult"] == "CONTINUE"
        (function,) = [f for f in _of_type(template, "AWS::Lambda::Function") if f["Handler"] == HANDLER]
        assert function["Environment"]["Variables"]["LIFECYCLE_RESULT_ON_FAILURE"] == "ABANDON"
        matches = lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"]))
        assert [str(m) for m in matches if m.rule.id.startswith("E")] == []

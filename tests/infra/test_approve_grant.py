"""The construct's grants for operators: answering held drains' approvals (one action) and reading drains'
timelines (two read actions), each on this function only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.infra.conftest import SINGLE


def test_grant_approve_allows_only_sending_callback_successes_to_this_function(tmp_path: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam
    from infra.app import build_app

    app = cdk.App(context={"aws:cdk:bundling-stacks": [], **SINGLE}, outdir=str(tmp_path))
    stack = build_app(app)
    operator = iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal())
    stack.orchestrator.grant_approve(operator)
    raw = json.loads(Path(app.synth().get_stack_by_name(stack.stack_name).template_full_path).read_text())
    operator_id = next(k for k, v in raw["Resources"].items() if v["Type"] == "AWS::IAM::Role" and "Operator" in k)
    policies = [
        v["Properties"]["PolicyDocument"]["Statement"]
        for v in raw["Resources"].values()
        if v["Type"] == "AWS::IAM::Policy" and {"Ref": operator_id} in v["Properties"]["Roles"]
    ]
    (statements,) = policies
    (statement,) = statements
    assert statement["Action"] == "lambda:SendDurableExecutionCallbackSuccess"
    function_id = next(k for k, v in raw["Resources"].items() if v["Type"] == "AWS::Lambda::Function")
    resources: list[Any] = statement["Resource"]
    assert resources[0] == {"Fn::GetAtt": [function_id, "Arn"]}
    assert resources[1] == {"Fn::Join": ["", [{"Fn::GetAtt": [function_id, "Arn"]}, ":*"]]}


def test_grant_read_history_allows_only_listing_and_reading_this_functions_executions(tmp_path: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam
    from infra.app import build_app

    app = cdk.App(context={"aws:cdk:bundling-stacks": [], **SINGLE}, outdir=str(tmp_path))
    stack = build_app(app)
    reader = iam.Role(stack, "Reader", assumed_by=iam.AccountRootPrincipal())
    stack.orchestrator.grant_read_history(reader)
    raw = json.loads(Path(app.synth().get_stack_by_name(stack.stack_name).template_full_path).read_text())
    reader_id = next(k for k, v in raw["Resources"].items() if v["Type"] == "AWS::IAM::Role" and "Reader" in k)
    ((statement,),) = [
        v["Properties"]["PolicyDocument"]["Statement"]
        for v in raw["Resources"].values()
        if v["Type"] == "AWS::IAM::Policy" and {"Ref": reader_id} in v["Properties"]["Roles"]
    ]
    # what `history` calls, and nothing that stops, answers or changes a drain
    assert sorted(statement["Action"]) == ["lambda:GetDurableExecutionHistory", "lambda:ListDurableExecutionsByFunction"]
    function_id = next(k for k, v in raw["Resources"].items() if v["Type"] == "AWS::Lambda::Function")
    assert statement["Resource"] == [
        {"Fn::GetAtt": [function_id, "Arn"]},
        {"Fn::Join": ["", [{"Fn::GetAtt": [function_id, "Arn"]}, ":*"]]},
    ]

"""The construct's grants for operators: answering held drains' approvals (one action) and reading drains'
timelines (two read actions), each on this function only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.infra.conftest import SINGLE


def _granted(tmp_path: Path, grant: Callable[[Any, Any], Any]) -> tuple[dict[str, Any], str]:
    """The one statement ``grant(orchestrator, role)`` gives a new role, and the function's logical id."""
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam
    from infra.app import build_app

    app = cdk.App(context={"aws:cdk:bundling-stacks": [], **SINGLE}, outdir=str(tmp_path))
    stack = build_app(app)
    grant(stack.orchestrator, iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal()))
    raw = json.loads(Path(app.synth().get_stack_by_name(stack.stack_name).template_full_path).read_text())
    operator_id = next(k for k, v in raw["Resources"].items() if v["Type"] == "AWS::IAM::Role" and "Operator" in k)
    ((statement,),) = [
        v["Properties"]["PolicyDocument"]["Statement"]
        for v in raw["Resources"].values()
        if v["Type"] == "AWS::IAM::Policy" and {"Ref": operator_id} in v["Properties"]["Roles"]
    ]
    function_id = next(k for k, v in raw["Resources"].items() if v["Type"] == "AWS::Lambda::Function")
    return statement, function_id


def _on_this_function(function_id: str) -> list[Any]:
    """The function and its versions, which its durable executions run on."""
    return [
        {"Fn::GetAtt": [function_id, "Arn"]},
        {"Fn::Join": ["", [{"Fn::GetAtt": [function_id, "Arn"]}, ":*"]]},
    ]


def test_grant_approve_allows_only_sending_callback_successes_to_this_function(tmp_path: Path) -> None:
    statement, function_id = _granted(tmp_path, lambda orchestrator, role: orchestrator.grant_approve(role))
    assert statement["Action"] == "lambda:SendDurableExecutionCallbackSuccess"
    assert statement["Resource"] == _on_this_function(function_id)


def test_grant_read_history_allows_only_listing_and_reading_this_functions_executions(tmp_path: Path) -> None:
    statement, function_id = _granted(tmp_path, lambda orchestrator, role: orchestrator.grant_read_history(role))
    # what `history` calls, and nothing that stops, answers or changes a drain
    assert sorted(statement["Action"]) == [
        "lambda:GetDurableExecutionHistory",
        "lambda:ListDurableExecutionsByFunction",
    ]
    assert statement["Resource"] == _on_this_function(function_id)

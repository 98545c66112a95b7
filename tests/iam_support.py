"""The function role's policy as the CDK app synthesizes it, and IAM's verdict on calls against it: evaluated offline
by @cloud-copilot/iam-simulate (testbed/iam_simulate.mjs; node from `make setup-node`)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from testbed.aws.calls import AwsCall
from testbed.aws_seed import SHARED_READS_TABLE
from testbed.bed import ACCOUNT_ID, REGION, REPO

NODE = REPO / "node_modules" / "node" / "bin" / "node"
SIMULATOR = REPO / "testbed" / "iam_simulate.mjs"


def _resolve(value: Any, refs: dict[str, str]) -> Any:
    """CloudFormation intrinsics in a policy document, resolved for the bed's account and Region."""
    pseudo = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT_ID, "AWS::URLSuffix": ""}
    if isinstance(value, list):
        return [_resolve(v, refs) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        name = value["Ref"]
        return pseudo.get(name) or refs.get(name, f"arn:aws:unresolved:::{name}")
    if set(value) == {"Fn::GetAtt"}:
        return refs.get(value["Fn::GetAtt"][0], f"arn:aws:unresolved:::{value['Fn::GetAtt'][0]}")
    if set(value) == {"Fn::Join"}:
        sep, parts = value["Fn::Join"]
        return sep.join(str(_resolve(p, refs)) for p in parts)
    return {k: _resolve(v, refs) for k, v in value.items()}


def _is_drainer(resource: dict[str, Any]) -> bool:
    """The drain function, not the one that applies the RBAC with the deploy (infra/rbac_applier.py)."""
    return bool(resource["Properties"]["Handler"] == "drain_orchestrator.handler.handler")


def role_policies(
    template: dict[str, Any], topic_arn: str, table_name: str = SHARED_READS_TABLE
) -> list[dict[str, Any]]:
    """The inline policies attached to the function's role (its default policy and the durable execution one), with
    the notification topic's ARN and the shared-reads table's (the bed's: testbed/aws_seed.py) put in."""
    resources = template["Resources"]
    (function,) = [r for r in resources.values() if r["Type"] == "AWS::Lambda::Function" and _is_drainer(r)]
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    refs = {k: topic_arn for k, r in resources.items() if r["Type"] == "AWS::SNS::Topic" and "Notification" in k}
    table_arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{table_name}"
    refs |= {k: table_arn for k, r in resources.items() if r["Type"] == "AWS::DynamoDB::Table"}
    policies = [
        {"name": k, "policy": _resolve(r["Properties"]["PolicyDocument"], refs)}
        for k, r in resources.items()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    assert policies, "the function's role has no inline policy"
    return policies


def simulate(policies: list[dict[str, Any]], calls: list[AwsCall], principal: str) -> list[str]:
    payload = {
        "account": ACCOUNT_ID,
        "principal": principal,
        "policies": policies,
        "calls": [{"action": c.action, "resource": c.resource, "tags": c.tags} for c in calls],
    }
    out = subprocess.run(
        [str(NODE), str(SIMULATOR)], input=json.dumps(payload), capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, f"the IAM simulator failed (npm deps missing? run make setup-node):\n{out.stderr}"
    results = json.loads(out.stdout)
    assert not [r for r in results if r["errors"]], results
    return [r["result"] for r in results]

"""Lookups in a synthesized stack's template that several tests/infra/test_stack_*.py modules share: a resource's
logical id, the live alias and queue references, the statements of the function role's policies."""

from __future__ import annotations

import json
from typing import Any

from tests.infra.conftest import Synthesized


def logical_id(synth: Synthesized, type_name: str, contains: str) -> str:
    matches = [k for k in synth.resources(type_name) if contains in k]
    assert len(matches) == 1, f"{type_name} *{contains}*: {matches}"
    return matches[0]


def alias_ref(synth: Synthesized) -> dict[str, str]:
    return {"Ref": logical_id(synth, "AWS::Lambda::Alias", "LiveAlias")}


def queue_arn(synth: Synthesized, name: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [logical_id(synth, "AWS::SQS::Queue", name), "Arn"]}


def statements(synth: Synthesized) -> list[dict[str, Any]]:
    """Every statement of the policies attached to the function's role (its default policy and the durable one)."""
    role = {"Ref": logical_id(synth, "AWS::IAM::Role", "ServiceRole")}
    policies = [p for p in synth.resources("AWS::IAM::Policy").values() if role in p["Properties"]["Roles"]]
    return [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]


def by_sid(synth: Synthesized) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in statements(synth) if "Sid" in s}


def managed_policies(synth: Synthesized) -> list[str]:
    role = synth.drainer("AWS::IAM::Role")
    return [json.dumps(arn) for arn in role.get("ManagedPolicyArns", [])]

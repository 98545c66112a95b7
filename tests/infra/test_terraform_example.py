"""examples/terraform: the released template deployed with Terraform (the zip and the template in an S3 bucket, one
`aws_cloudformation_stack`), its HCL parsed (python-hcl2) and checked against the template's parameters."""

from __future__ import annotations

import json
import re
from typing import Any

import hcl2
import pytest

from drain_orchestrator import __version__

from .conftest import REPO_ROOT

# the first test to ask for the template builds it (about 20 synths: minutes on a loaded machine)
pytestmark = [pytest.mark.timeout(900)]

MAIN = REPO_ROOT / "examples" / "terraform" / "main.tf"
TEMPLATE_BODY_LIMIT = 51_200  # bytes CloudFormation takes inline (TemplateBody); larger ones from S3


def _name(quoted: str) -> str:
    return quoted.strip('"')


def _blocks(parsed: dict[str, Any], kind: str) -> dict[str, Any]:
    """``resource "type" "name" {}`` → {"type.name": body}; ``variable "name" {}`` → {"name": body}."""
    out: dict[str, Any] = {}
    for block in parsed.get(kind, []):
        for first, body in block.items():
            if kind in ("resource", "data"):
                for second, inner in body.items():
                    out[f"{_name(first)}.{_name(second)}"] = inner
            else:
                out[_name(first)] = body
    return out


@pytest.fixture(scope="module")
def parsed() -> dict[str, Any]:
    with MAIN.open() as f:
        loaded: dict[str, Any] = hcl2.load(f)
    return loaded


def test_every_required_parameter_is_passed_and_no_unknown_one(
    parsed: dict[str, Any], released: dict[str, Any]
) -> None:
    (locals_,) = parsed["locals"]
    passed = set(locals_["parameters"])
    declared = released["Parameters"]
    assert passed <= set(declared), f"not parameters of the template: {passed - set(declared)}"
    required = {name for name, body in declared.items() if "Default" not in body}
    assert required == {"ClusterName", "CodeBucket"} and required <= passed
    stack = _blocks(parsed, "resource")["aws_cloudformation_stack.drain_orchestrator"]
    assert stack["parameters"] == "${merge(var.settings, local.parameters)}"  # the fixed ones win over settings
    assert [_name(c) for c in stack["capabilities"]] == ["CAPABILITY_IAM"]


def test_the_template_comes_from_s3_and_the_release_is_this_one(
    parsed: dict[str, Any], released: dict[str, Any]
) -> None:
    assert len(json.dumps(released, indent=1)) > TEMPLATE_BODY_LIMIT  # as make release writes it: too big inline
    stack = _blocks(parsed, "resource")["aws_cloudformation_stack.drain_orchestrator"]
    assert "template_body" not in stack and "${aws_s3_object.template.key}" in stack["template_url"]
    variables = _blocks(parsed, "variable")
    assert _name(variables["release"]["default"]) == __version__
    (locals_,) = parsed["locals"]
    zip_name = _name(locals_["zip"]).replace("${var.release}", __version__)
    assert zip_name == released["Parameters"]["CodeKey"]["Default"]


def test_every_reference_is_declared(parsed: dict[str, Any], released: dict[str, Any]) -> None:
    text = MAIN.read_text()
    declared = {
        "var": set(_blocks(parsed, "variable")),
        "local": set(parsed["locals"][0]) - {"__is_block__"},
        "aws_s3_object": {k.split(".", 1)[1] for k in _blocks(parsed, "resource") if k.startswith("aws_s3_object.")},
        "data.aws_s3_bucket": {k.split(".", 1)[1] for k in _blocks(parsed, "data")},
    }
    for kind, names in declared.items():
        used = set(re.findall(rf"\b{re.escape(kind)}\.([a-z_]+)", text))
        assert used <= names, f"{kind}: {used - names} not declared"
    stack_outputs = set(re.findall(r'outputs\["(\w+)"\]', text))
    assert stack_outputs and stack_outputs <= set(released["Outputs"])

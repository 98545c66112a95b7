"""The plain CloudFormation template `make release` ships (infra/release_template.py): self-contained, cfn-lint clean
(cdk-nag ran on every synth it was built from), a parameter change publishes a new function version."""

from __future__ import annotations

import json
from typing import Any

from cfnlint.api import ManualArgs, lint

from drain_orchestrator import __version__
from infra import release_template


def test_self_contained_with_the_code_from_the_bucket_parameters(released: dict[str, Any]) -> None:
    text = json.dumps(released)
    assert "BootstrapVersion" not in text and "Rules" not in released and "cdk-hnb659fds" not in text
    assert "zz" not in text  # no sentinel left
    assert released["Parameters"]["CodeKey"]["Default"] == f"drain-orchestrator-lambda-{__version__}.zip"
    assert "Default" not in released["Parameters"]["ClusterName"]  # required
    functions = [r["Properties"] for r in released["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 2 and all(f["Code"] == {"S3Bucket": {"Ref": "CodeBucket"}, "S3Key": {"Ref": "CodeKey"}}
                                       for f in functions)  # fmt: skip
    assert set(released["Parameters"]) == {p.name for p in release_template.PARAMETERS} | {"CodeBucket", "CodeKey"}


def test_cfn_lint_clean(released: dict[str, Any]) -> None:
    matches = lint(json.dumps(released), config=ManualArgs(regions=["us-east-1", "eu-west-1"]))
    assert [f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in matches] == []


def test_a_parameter_change_publishes_a_new_version(released: dict[str, Any]) -> None:
    (version,) = [r for r in released["Resources"].values() if r["Type"] == "AWS::Lambda::Version"]
    named = {p["Ref"] for p in version["Properties"]["Description"]["Fn::Join"][1] if isinstance(p, dict)}
    assert {"CodeKey", "ClusterName", "LogLevel", "MemorySize", "DryRun", "ActionRebalance"} <= named
    assert version["UpdateReplacePolicy"] == "Retain"  # the previous version stays for its executions

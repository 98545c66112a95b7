"""cdk-nag (AwsSolutions, v3 Validations API) and cfn-lint on the synthesized templates."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint
from infra.config import config_from_mapping
from infra.execution_role import nag_findings
from infra.nag import nag_acknowledgements

from tests.infra.conftest import (
    DOCUMENTED_CONFIG_MAP,
    DOCUMENTED_VPC,
    MULTI_VPC,
    SINGLE,
    Synthesized,
    synthesize,
)

# the terminate rule without a hook-name filter (actionForeignHook) and the controller opt-ins
COEXISTENCE = {
    "clusters": "prod",
    "lifecycleHookNames": "node-drainer",
    "actionForeignHook": "drain",
    "drainControllerManagedNodes": "karpenter,auto-mode",
}
# every combination the docs show, and every option set at once
CONFIGS = {
    "single": SINGLE,
    "multi-vpc": MULTI_VPC,
    "docs-vpc": DOCUMENTED_VPC,
    "docs-config-map": DOCUMENTED_CONFIG_MAP,
    "coexistence": COEXISTENCE,
}


def nag_report(synth: Synthesized) -> dict[str, Any]:
    (report,) = [
        plugin
        for plugin in json.loads((synth.outdir / "validation-report.json").read_text())["pluginReports"]
        if plugin["pluginName"] == "AwsSolutions"
    ]
    return report  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", CONFIGS)
def test_cdk_nag_has_no_unacknowledged_findings(name: str, synth: Callable[[Mapping[str, Any]], Synthesized]) -> None:
    synthesized = synth(CONFIGS[name])
    report = nag_report(synthesized)  # synth itself raises on an unacknowledged finding
    assert report["conclusion"] == "success"
    assert report["violations"] == []
    suppressed = report["suppressedViolations"]
    assert suppressed, "expected the documented acknowledgements to be exercised"
    for finding in suppressed:
        assert len(finding["reason"]) >= 40, finding["acknowledgedId"]  # a reason, not a placeholder
    # every acknowledgement is used: none is a stale blanket exemption
    used = {finding["acknowledgedId"] for finding in suppressed}
    own = nag_findings(synthesized.stack.orchestrator.function)  # ids naming the construct's logical ids
    assert used == set(nag_acknowledgements(config_from_mapping(CONFIGS[name]))) | set(own)


def test_cdk_nag_is_enforced(tmp_path: Path) -> None:
    """A non-compliant resource added to the stack must fail the synth: the checks really run."""
    import aws_cdk as cdk
    from aws_cdk import aws_sqs as sqs
    from infra.app import build_app

    app = cdk.App(context={"aws:cdk:bundling-stacks": [], **SINGLE}, outdir=str(tmp_path))
    stack = build_app(app)
    sqs.CfnQueue(stack, "PlainQueue")  # no encryption, no TLS policy, no DLQ
    with pytest.raises(Exception, match=r"(?i)validation"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    flagged = {
        (violation["ruleName"], construct["constructPath"])
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        for construct in violation["violatingConstructs"]
    }
    assert ("AwsSolutions-SQS4", "DrainOrchestrator/PlainQueue") in flagged  # no TLS-only policy
    # SQS3 is acknowledged for our dead-letter queues only, not for the whole app
    assert ("AwsSolutions-SQS3", "DrainOrchestrator/PlainQueue") in flagged


@pytest.mark.parametrize("name", CONFIGS)
def test_cfn_lint_clean(name: str, synth: Callable[[Mapping[str, Any]], Synthesized]) -> None:
    template = json.dumps(synth(CONFIGS[name]).raw)
    matches = lint(template, config=ManualArgs(regions=["us-east-1", "eu-west-1"]))
    assert [f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in matches] == []


def test_cfn_lint_catches_a_broken_template(single: Synthesized) -> None:
    """Guards the check above against silently linting nothing."""
    broken = json.loads(json.dumps(single.raw))
    function = next(r for r in broken["Resources"].values() if r["Type"] == "AWS::Lambda::Function")
    function["Properties"]["Runtime"] = "python2.7"
    function["Properties"]["MemorySize"] = 1
    assert lint(json.dumps(broken), config=ManualArgs(regions=["us-east-1"]))


def test_bad_context_fails_the_synth_naming_the_key(tmp_path: Path) -> None:
    from infra.config import ConfigError

    with pytest.raises(ConfigError, match="'memorySize'"):
        synthesize({"clusters": "prod", "memorySize": "64"}, tmp_path)

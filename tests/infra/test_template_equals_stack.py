"""The plain CloudFormation template says what the CDK app says: resolved for an assignment of its parameters
(conditions, ``Fn::If``, references and substitutions of parameters: tests/infra/template_resolve.py), it equals
`cdk synth` of the app with the same settings as context keys.

Normalised, because it must differ: the code's location (the app's asset in the bootstrap bucket; the template's
CodeBucket/CodeKey), the function version's description (the template names the parameters in it, to publish a
version when one changes), logical ids (the app's are named after the cluster and the e-mail address; the
template's after the parameters: paired by construct path), and a number that is a literal in the app and a
parameter's (string) value in the template.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from infra.template_sentinels import replace_refs

from infra import release_template

from .conftest import synthesize
from .template_resolve import resolve

# the first test to ask for the template builds it (about 20 synths: minutes on a loaded machine)
pytestmark = [pytest.mark.long_running, pytest.mark.timeout(900)]

# settings as template parameters and as the app's context keys; distinctive values, found again in construct paths
CLUSTER = "blue-prod"
CONTEXT_KEY = {
    "LifecycleHookName": "createdHookName",
    "AlarmEmail": "alarmEmail",
    "ActionSpotInterruption": "actionSpotInterruption",
    "ActionCapacityReservationInterruption": "actionCapacityReservationInterruption",
    "ActionRebalance": "actionRebalance",
    "ActionStateChange": "actionStateChange",
    "ActionScheduledChange": "actionScheduledChange",
    "ActionCapacityBlock": "actionCapacityBlock",
    "CreateAccessEntries": "createAccessEntries",
    "ApplyRbac": "applyRbac",
    "LogLevel": "logLevel",
    "MemorySize": "memorySize",
    "TimeoutSeconds": "timeoutSeconds",
    "LogRetentionDays": "logRetentionDays",
}
ASSIGNMENTS: dict[str, dict[str, str | int]] = {
    "defaults": {},
    "alarm-email": {"AlarmEmail": "oncall@example.com"},
    "strings": {
        "LifecycleHookName": "node-drainer",
        "OwnershipTagKey": "example.com/team",
        "OwnershipTagValue": "platform",
    },
    "numbers": {"MemorySize": 1024, "TimeoutSeconds": 900, "LogRetentionDays": 90},
    **{
        f"{p.name}-{value}": {p.name: value}
        for p in release_template.PARAMETERS
        for value in p.variants
        if value != ""  # the empty value of an optional string is the default
    },
    "combined": {
        "AlarmEmail": "oncall@example.com",
        "ActionSpotInterruption": "cordon",
        "ActionRebalance": "drain",
        "ActionStateChange": "cordon",
        "DryRun": "true",
        "ApplyRbac": "false",
        "LogLevel": "DEBUG",
        "TimeoutSeconds": 300,
    },
    "config-map": {"CreateAccessEntries": "false", "ActionScheduledChange": "cordon", "OwnershipTagKey": "team"},
    "edges": {
        "ClusterName": "Prod-2_b",
        "AlarmEmail": "Ops+Drains@Example.org",
        "MemorySize": 128,
        "TimeoutSeconds": 180,
        "LogRetentionDays": 1,
    },
}


def context_of(values: Mapping[str, str | int]) -> dict[str, Any]:
    """The `cdk synth -c` keys for a template's parameters (the mapping docs/deploy.md states)."""
    context: dict[str, Any] = {"clusters": values["ClusterName"]}
    for name, value in values.items():
        if name in CONTEXT_KEY and value != "":
            context[CONTEXT_KEY[name]] = str(value)
    if values.get("OwnershipTagKey"):  # one context key, key or key=value
        value = values.get("OwnershipTagValue")
        context["ownershipTag"] = f"{values['OwnershipTagKey']}={value}" if value else values["OwnershipTagKey"]
    if values.get("DryRun") == "true":
        context["drainSettings"] = json.dumps({"DRY_RUN": "true"})
    if values.get("CreateAccessEntries") == "false" and values.get("ApplyRbac", "true") == "true":
        context.pop("applyRbac", None)  # true means "with the access entries": the app refuses it without them
    return context


def _by_path(resources: Mapping[str, Any]) -> dict[str, str]:
    return {body["Metadata"]["aws:cdk:path"]: k for k, body in resources.items() if "Metadata" in body}


def app_as_template_ids(app: dict[str, Any], template: dict[str, Any], values: Mapping[str, str | int]) -> None:
    """The app's logical ids replaced by the template's for the same construct (the path, with the parameters'
    values named as the template names them)."""
    template_ids = _by_path(template["Resources"])
    named = {p.name: str(values.get(p.name, "")) for p in release_template.PARAMETERS if isinstance(p.sentinel, str)}
    renamed = {}
    for app_path, logical_id in _by_path(app["Resources"]).items():
        path = app_path
        for name, value in named.items():
            if value:
                path = path.replace(value, "{" + name + "}")
        assert path in template_ids, f"{logical_id} ({path}): no such construct in the template"
        renamed[logical_id] = template_ids[path]
    assert len(set(renamed.values())) == len(renamed), f"two of the app's resources on one of the template's: {renamed}"
    app["Resources"] = {renamed.get(k, k): body for k, body in app["Resources"].items()}
    replace_refs(app, renamed)


def normalised(resources: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(resources)
    for logical_id, body in list(out.items()):
        body.pop("Metadata", None)
        if body["Type"] == "AWS::CDK::Metadata":
            del out[logical_id]
        elif body["Type"] == "AWS::Lambda::Function":
            body["Properties"]["Code"] = "the release's Lambda zip"
        elif body["Type"] == "AWS::Lambda::Version":
            body["Properties"].pop("Description", None)
    return _scalars_as_text(out)


def _scalars_as_text(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _scalars_as_text(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_scalars_as_text(v) for v in node]
    if isinstance(node, int | float) and not isinstance(node, bool):
        return str(node)
    return node


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    if a == b:
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in the template" for k in a.keys() - b.keys()]
        out += [f"{where}.{k}: only in the app" for k in b.keys() - a.keys()]
        return out + [d for k in a.keys() & b.keys() for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")]
    return [f"{where}: template {json.dumps(a)[:300]} / app {json.dumps(b)[:300]}"]


@pytest.mark.parametrize("assignment", list(ASSIGNMENTS))
def test_the_template_resolves_to_the_apps_synth(assignment: str, released: dict[str, Any], tmp_path: Path) -> None:
    values = {"ClusterName": CLUSTER, "CodeBucket": "my-artifacts", **ASSIGNMENTS[assignment]}
    deployed = resolve(released, values)
    app = synthesize({**context_of(values), "aws:cdk:enable-path-metadata": True}, tmp_path).raw
    app_as_template_ids(app, released, values)
    assert differences(normalised(deployed["Resources"]), normalised(app["Resources"])) == []
    assert differences(_scalars_as_text(deployed["Outputs"]), _scalars_as_text(app["Outputs"])) == []


ENVIRONMENT = {"AWS::AccountId": "123456789012", "AWS::Region": "eu-west-1", "AWS::Partition": "aws",
               "AWS::URLSuffix": "amazonaws.com"}  # fmt: skip


@pytest.mark.parametrize("assignment", ["defaults", "alarm-email"])
def test_the_template_resolves_to_the_apps_synth_in_an_environment(
    assignment: str, released: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cdk deploy` synthesizes for the account and region it deploys to (CDK_DEFAULT_ACCOUNT/REGION), where the app
    may write literals that the template leaves to pseudo parameters. Both resolved in that environment are the
    same (today only the asset's bucket is written for the environment)."""
    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", ENVIRONMENT["AWS::AccountId"])
    monkeypatch.setenv("CDK_DEFAULT_REGION", ENVIRONMENT["AWS::Region"])
    values = {"ClusterName": CLUSTER, "CodeBucket": "my-artifacts", **ASSIGNMENTS[assignment]}
    deployed = resolve(released, values, ENVIRONMENT)
    app = synthesize({**context_of(values), "aws:cdk:enable-path-metadata": True}, tmp_path).raw
    app_as_template_ids(app, released, values)
    code = [r["Properties"]["Code"] for r in app["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert all(c["S3Bucket"] == "cdk-hnb659fds-assets-123456789012-eu-west-1" for c in code)  # synthesized for it
    # the app's only rule is CDK's check of the bootstrap stack's version, which holds wherever cdk deploy runs
    app = resolve({**app, "Parameters": {}, "Rules": {}}, {}, ENVIRONMENT)
    assert differences(normalised(deployed["Resources"]), normalised(app["Resources"])) == []
    assert differences(_scalars_as_text(deployed["Outputs"]), _scalars_as_text(app["Outputs"])) == []


def test_logical_ids_differ_beyond_their_hash(released: dict[str, Any]) -> None:
    """A resource named after a parameter's value keeps the parameter's name in its id, so no two ids are one
    construct's name with different hashes (an e-mail subscription is not taken for its topic)."""
    stems = [k[:-8] for k in released["Resources"] if k[-8:].isalnum() and k[-8:].upper() == k[-8:]]
    assert len(stems) == len(set(stems)), sorted(s for s in stems if stems.count(s) > 1)
    assert "DrainOrchestratorAlarmTopicAlarmEmail" in stems

"""The RBAC applied with the deploy (infra/rbac_applier.py) as the template wires it: an applier function on the drain
function's own code asset, a role that may only describe the served clusters and write logs, a cluster-admin access
entry per cluster that the custom resource waits for, the resource itself carrying the manifests' digest; the switch
and its rules; the asset carrying the manifests the handler applies."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from infra.config import ConfigError
from infra.rbac_applier import CLUSTER_ADMIN_POLICY, HANDLER, RESOURCE_TYPE

from drain_orchestrator.cli.rbac import MANIFESTS
from infra import bundle
from tests.infra.conftest import DOCUMENTED_CONFIG_MAP, RBAC_APPLIER_PREFIX, Synthesized, synthesize


def _applier(synth: Synthesized) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in synth.raw["Resources"].items() if k.startswith(RBAC_APPLIER_PREFIX)}


def _by_type(resources: dict[str, dict[str, Any]], type_name: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in resources.items() if r["Type"] == type_name}


def test_one_applier_and_per_cluster_an_admin_entry_and_a_resource_waiting_for_it(
    synth: Callable[[Mapping[str, Any]], Synthesized],
) -> None:
    result = synth({"clusters": "prod,staging"})
    mine = _applier(result)
    ((function_id, function),) = _by_type(mine, "AWS::Lambda::Function").items()
    props = function["Properties"]
    assert props["Handler"] == HANDLER and props["Runtime"] == "python3.13" and props["Architectures"] == ["arm64"]
    drainer = next(
        r["Properties"]
        for r in result.resources("AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == "drain_orchestrator.handler.handler"
    )
    assert props["Code"] == drainer["Code"]  # the same code asset: the same release's manifests and apply logic
    assert props["LoggingConfig"]["LogGroup"] == drainer["LoggingConfig"]["LogGroup"]
    assert "DurableConfig" not in props

    ((role_id, role),) = _by_type(mine, "AWS::IAM::Role").items()
    assert props["Role"] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert "ManagedPolicyArns" not in role["Properties"]  # nothing but its inline policy
    (policy,) = role["Properties"]["Policies"]
    statements = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    assert statements["DescribeServedClusters"]["Action"] == "eks:DescribeCluster"
    described = [r["Fn::Join"][1][-1] for r in statements["DescribeServedClusters"]["Resource"]]
    assert described == [":cluster/prod", ":cluster/staging"]
    log_group = drainer["LoggingConfig"]["LogGroup"]["Ref"]
    assert statements["WriteLogs"]["Resource"] == {"Fn::GetAtt": [log_group, "Arn"]}
    assert set(statements) == {"DescribeServedClusters", "WriteLogs"}
    assert not _by_type(mine, "AWS::IAM::Policy")

    entries = _by_type(mine, "AWS::EKS::AccessEntry")
    resources = _by_type(mine, RESOURCE_TYPE)
    assert sorted(r["Properties"]["ClusterName"] for r in resources.values()) == ["prod", "staging"]
    for resource in resources.values():
        cluster = resource["Properties"]["ClusterName"]
        ((entry_id, entry),) = [(k, e) for k, e in entries.items() if e["Properties"]["ClusterName"] == cluster]
        assert entry["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [role_id, "Arn"]}
        (access,) = entry["Properties"]["AccessPolicies"]
        assert access["AccessScope"] == {"Type": "cluster"}
        assert access["PolicyArn"]["Fn::Join"][1][-1].endswith(f"cluster-access-policy/{CLUSTER_ADMIN_POLICY}")
        assert resource["Properties"]["ServiceToken"] == {"Fn::GetAtt": [function_id, "Arn"]}
        assert resource["Properties"]["ManifestsSha256"] == bundle.manifests_digest()
        assert resource["Properties"]["Surge"] == "true"  # SURGE_BLOCKED_PODS=annotated: surge's rights too
        # created after its entry, deleted before it: the objects go while the applier still has access
        assert resource["DependsOn"] == [entry_id]
        assert int(resource["Properties"]["ServiceTimeout"]) > props["Timeout"]


def test_the_applier_follows_the_access_entries_and_can_be_turned_off(
    synth: Callable[[Mapping[str, Any]], Synthesized], tmp_path: Path
) -> None:
    assert _applier(synth(DOCUMENTED_CONFIG_MAP)) == {}  # CONFIG_MAP clusters: the manual path
    assert _applier(synth({"clusters": "prod", "applyRbac": "false"})) == {}
    assert _by_type(_applier(synth({"clusters": "prod", "applyRbac": "true"})), RESOURCE_TYPE)
    with pytest.raises(ConfigError, match=r"'applyRbac': needs create_access_entries"):
        synthesize({"clusters": "prod", "applyRbac": "true", "createAccessEntries": "false"}, tmp_path)


def test_a_function_that_never_surges_gets_no_surge_rights_from_the_stack(
    synth: Callable[[Mapping[str, Any]], Synthesized],
) -> None:
    never = synth({"clusters": "prod", "drainSettings": '{"SURGE_BLOCKED_PODS": "never"}'})
    (resource,) = _by_type(_applier(never), RESOURCE_TYPE).values()
    assert resource["Properties"]["Surge"] == "false"


def test_a_changed_manifest_changes_the_digest_the_resources_carry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "k8s"
    shutil.copytree(bundle.MANIFEST_DIR, copy)
    monkeypatch.setattr(bundle, "MANIFEST_DIR", copy)
    first = bundle.manifests_digest()
    assert first == bundle.manifests_digest()
    (copy / "rbac.yaml").write_text((copy / "rbac.yaml").read_text().replace('"watch", "patch"', '"patch"'))
    assert bundle.manifests_digest() != first
    second = bundle.manifests_digest()
    (copy / "surge-rbac.yaml").write_text("# a new manifest\n")
    assert bundle.manifests_digest() != second


def test_the_asset_carries_the_manifests_the_handler_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """assemble() without the (cached, ~70 MB) dependencies: only where our package and its manifests go."""
    empty = tmp_path / "deps"
    empty.mkdir()
    monkeypatch.setattr(bundle, "cached_dependencies", lambda *_: empty)
    tree = tmp_path / "asset"
    bundle.assemble(tree)
    shipped = tree / bundle.PACKAGE_NAME / "k8s"
    for name in MANIFESTS:
        assert (shipped / name).read_bytes() == (bundle.MANIFEST_DIR / name).read_bytes()

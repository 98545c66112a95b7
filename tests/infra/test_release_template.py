"""The plain CloudFormation template `make release` ships (infra/release_template.py): self-contained, cfn-lint clean
(cdk-nag ran on every synth it was built from), a parameter change publishes a new function version."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint

from drain_orchestrator import __version__
from infra import release_template

from .conftest import REPO_ROOT, release_script, uv
from .template_resolve import resolve

# the first test to ask for the template builds it (about 20 synths: minutes on a loaded machine)
pytestmark = [pytest.mark.timeout(900)]


def test_self_contained_with_the_code_from_the_bucket_parameters(released: dict[str, Any]) -> None:
    text = json.dumps(released)
    assert "BootstrapVersion" not in text and "cdk-hnb659fds" not in text
    assert set(released["Rules"]) == {"OwnershipTagValueNeedsKey"}  # the template's own, no bootstrap rule
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


def _version_description(template: dict[str, Any], values: dict[str, str | int]) -> str:
    (version,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Version"]
    description = resolve(template, values)["Resources"][version]["Properties"]["Description"]
    assert isinstance(description, str)
    return description


_VERSION_FILE = "lambda_src/drain_orchestrator/__init__.py"
BASE = {"ClusterName": "prod", "CodeBucket": "my-artifacts"}


@pytest.mark.parametrize(
    "change",
    [
        {"CodeKey": "drain-orchestrator-lambda-9.9.9.zip"},
        {"ClusterName": "prod2"},
        {"LifecycleHookName": "node-drainer"},
        {"OwnershipTagKey": "team"},
        {"OwnershipTagKey": "team", "OwnershipTagValue": "platform"},
        *({name: value} for name in release_template.ACTIONS for value in ("drain", "cordon")),
        {"DryRun": "true"},
        *({"LogLevel": level} for level in ("DEBUG", "WARNING", "ERROR")),
        {"MemorySize": 1024},
        {"TimeoutSeconds": 900},
    ],
    ids=lambda change: "-".join(f"{k}={v}" for k, v in change.items()),
)
def test_a_parameter_change_publishes_a_new_version(released: dict[str, Any], change: dict[str, str | int]) -> None:
    """The version's description (replaced when it changes: a new version, the alias moved to it) differs for every
    value of every parameter the function's configuration depends on."""
    before = _version_description(released, BASE)
    after = _version_description(released, {**BASE, **change})
    if all(str(value) == str(released["Parameters"][name].get("Default")) for name, value in change.items()):
        assert after == before
    else:
        assert after != before, change


def test_the_ownership_tag_reads_in_the_version_as_the_function_reads_it(released: dict[str, Any]) -> None:
    """OWNERSHIP_TAG key or key=value: a key alone and the same key with a value are different versions."""
    key_only = _version_description(released, {**BASE, "OwnershipTagKey": "team"})
    with_value = _version_description(released, {**BASE, "OwnershipTagKey": "team", "OwnershipTagValue": "platform"})
    assert "/team/" in key_only and "/team=platform/" in with_value


def test_a_value_without_a_key_is_refused(released: dict[str, Any]) -> None:
    """Not silently no ownership rule: CloudFormation refuses the values before it changes anything."""
    with pytest.raises(ValueError, match="OwnershipTagValue needs an OwnershipTagKey"):
        resolve(released, {**BASE, "OwnershipTagValue": "platform"})
    resolve(released, {**BASE, "OwnershipTagKey": "team", "OwnershipTagValue": "platform"})


def test_the_version_description_fits_lambdas_limit(released: dict[str, Any]) -> None:
    """Lambda refuses a version description over 256 characters: the longest values the parameters allow fit."""
    longest: dict[str, str | int] = {"CodeBucket": "b" * 63}
    for name in (*release_template.VERSION_TEXT, *release_template.VERSION_CHOICES):
        declared = released["Parameters"][name]
        allowed = declared.get("AllowedValues")
        longest[name] = max(allowed, key=len) if allowed else "x" * declared["MaxLength"]
    longest |= {"MemorySize": 10240, "TimeoutSeconds": 900}
    description = _version_description(released, longest)
    assert len(description) <= release_template.VERSION_DESCRIPTION_LIMIT, description
    assert _version_description(released, BASE) == (
        f"drain-orchestrator-lambda-{__version__}.zip/prod/drain-orchestrator//ddcdddfI/512/600"
    )
    version = next(r for r in released["Resources"].values() if r["Type"] == "AWS::Lambda::Version")
    assert version["UpdateReplacePolicy"] == "Retain"  # the previous version stays for its executions


def test_the_documented_deploy_uploads_the_template(released: dict[str, Any]) -> None:
    """CloudFormation takes at most 51,200 bytes of template inline; the release writes more: docs/deploy.md's
    `aws cloudformation deploy` has it uploaded to the bucket."""
    assert len(json.dumps(released, indent=1)) > 51_200
    deploy_md = (REPO_ROOT / "docs" / "deploy.md").read_text()
    command = deploy_md[deploy_md.index("aws cloudformation deploy") :].split("```", 1)[0]
    assert "--s3-bucket my-artifacts" in command


def test_actions_offer_drain_and_cordon(released: dict[str, Any]) -> None:
    """`ignore` (no rule for a kind) is the construct's alone: the template could not be the stack (docs/deploy.md)."""
    for name in release_template.ACTIONS:
        assert sorted(released["Parameters"][name]["AllowedValues"]) == ["cordon", "drain"]


def test_sentinels_hold_the_characters_values_are_split_on() -> None:
    """A sentinel without "=" could not show that the construct partitions the ownership tag at it: refused."""
    release_template.check_sentinels(release_template.PARAMETERS)
    single_tag = release_template.Param(
        "OwnershipTag", "key or key=value", "", pattern=r"^([^=,]{1,63}(=[^=,]+)?)?$", sentinel="zzownerzz"
    )
    with pytest.raises(ValueError, match=r"OwnershipTag: the sentinel 'zzownerzz' lacks \['=', '/', ':'\]"):
        release_template.check_sentinels((single_tag,))
    unmarked = release_template.Param("Hook", "hook", "h", pattern=r"^[a-z/]+$", sentinel="zzhookzz/name")
    with pytest.raises(ValueError, match="every part of the sentinel 'zzhookzz/name' begins with zz"):
        release_template.check_sentinels((unmarked,))


def test_the_release_bundle_holds_six_artefacts_and_checksums(released: dict[str, Any], tmp_path: Path) -> None:
    """`make release` into a directory of its own: both wheels as uv builds them, then `build/release.py bundle`.
    What lands there is the six artefacts docs/releases.md lists and SHA256SUMS, which `sha256sum -c` verifies; the
    template is release_template's build for this version (the session's, handed to the step: its synths run once)."""
    dist, v = tmp_path / "dist", __version__
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    for project in (".", "infra"):
        build = [uv(), "build", project, "--wheel", "--quiet", "--out-dir", str(dist)]
        subprocess.run(build, cwd=REPO_ROOT, env=env, check=True, timeout=300)
    artefacts = release_script().bundle(dist, template=released)

    names = [
        f"drain_orchestrator_cdk-{v}-py3-none-any.whl",
        f"drain_orchestrator-{v}-py3-none-any.whl",
        f"drain-orchestrator-lambda-{v}.zip",
        f"drain-orchestrator-rbac-{v}.yaml",
        f"drain-orchestrator-rbac-surge-{v}.yaml",
        f"drain-orchestrator-{v}.template.json",
    ]
    assert [p.name for p in artefacts] == names
    # besides the .gitignore uv build writes into an output directory it creates
    assert sorted(p.name for p in dist.iterdir() if p.name != ".gitignore") == sorted([*names, "SHA256SUMS"])
    verified = subprocess.run(
        ["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=dist, capture_output=True, text=True, check=False
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert sorted(verified.stdout.splitlines()) == sorted(f"{name}: OK" for name in names)

    assert json.loads((dist / f"drain-orchestrator-{v}.template.json").read_text(encoding="utf-8")) == released
    for shipped, source in ((names[3], "rbac.yaml"), (names[4], "rbac-surge.yaml")):
        assert (dist / shipped).read_bytes() == (REPO_ROOT / "infra" / "k8s" / source).read_bytes()
    with zipfile.ZipFile(dist / names[2]) as code:
        assert code.read("drain_orchestrator/__init__.py") == (REPO_ROOT / _VERSION_FILE).read_bytes()


def test_the_release_bundle_needs_the_wheels_first(tmp_path: Path) -> None:
    release = release_script()
    with pytest.raises(release.ReleaseError, match=rf"missing drain_orchestrator_cdk-{__version__}-py3-none-any.whl, "):
        release.bundle(tmp_path)
    assert list(tmp_path.iterdir()) == []  # refused before anything was written

"""`npx cdk synth` end to end: the pinned CLI on Node 22 from node_modules, real local bundling (no Docker).

Slow by nature (jsii + a ~70 MB asset); the dependency tree is cached under .build/, so only the first run
on a machine installs wheels.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra import bundle
from tests.infra.conftest import DOCUMENTED_CONFIG_MAP, DOCUMENTED_VPC

REPO_ROOT = bundle.REPO_ROOT
ZIP_GOAL_BYTES = 15 * 1000 * 1000  # without the kubernetes client: 10.9 MB


def npx_env() -> dict[str, str]:
    """The environment of a machine where only `make setup` ran: our node_modules not on PATH (npx alone must
    pick Node 22), no uv on PATH and no `UV` (the Makefile exports it; a user's shell does not)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(
        p
        for p in env["PATH"].split(os.pathsep)
        if "node_modules" not in p and not (Path(p) / "uv").exists() and p != str(Path(sys.executable).parent)
    )
    for name in ("CDK_CONTEXT_JSON", "UV", "VIRTUAL_ENV"):
        env.pop(name, None)
    return env


def cdk_synth(
    outdir: Path, *context: str, cli: tuple[str, ...] = ("npx", "--no-install", "cdk")
) -> subprocess.CompletedProcess[str]:
    """The documented synth command (README / docs/deploy.md) with `-o outdir`."""
    args = [*cli, "synth", "-q", "-o", str(outdir)]
    for item in context:
        args += ["-c", item]
    return subprocess.run(args, cwd=REPO_ROOT, env=npx_env(), capture_output=True, text=True, timeout=600, check=False)


def test_synth_environment_has_no_uv() -> None:
    env = npx_env()
    assert "UV" not in env
    assert subprocess.run(["sh", "-c", "command -v uv"], env=env, check=False).returncode != 0


@pytest.fixture(scope="module")
def synthesized(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str], float]:
    outdir = tmp_path_factory.mktemp("npx-cdk-out")
    started = time.monotonic()
    result = cdk_synth(outdir, "clusters=prod", "alarmEmail=oncall@example.com")
    return outdir, result, time.monotonic() - started


def test_npx_cdk_synth_bundles_locally_on_node_22(
    synthesized: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    outdir, result, seconds = synthesized
    assert result.returncode == 0, result.stderr[-4000:]
    assert "running on node v20" not in result.stderr  # jsii ran on the pinned Node 22
    template = json.loads((outdir / "DrainOrchestrator.template.json").read_text())
    function = next(r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function")
    assets = json.loads((outdir / "DrainOrchestrator.assets.json").read_text())
    (asset,) = [a["source"]["path"] for a in assets["files"].values() if a["source"].get("packaging") == "zip"]
    assert function["Properties"]["Code"]["S3Key"].endswith(".zip")
    tree = outdir / asset
    assert (tree / "drain_orchestrator" / "__init__.py").is_file()
    assert (tree / "pydantic_core" / "_pydantic_core.cpython-313-aarch64-linux-gnu.so").is_file()
    assert not list(tree.glob("pydantic_core/*x86_64*"))
    # the apiserver is reached over urllib3: no kubernetes client, nor what only it needs
    assert not [p.name for p in tree.iterdir() if p.name.split("-")[0] in ("kubernetes", "aiohttp", "requests", "yaml")]
    assert (tree / "urllib3" / "poolmanager.py").is_file()
    # bytecode ships (read-only /var/task): our handler's and the libraries'
    assert (tree / "drain_orchestrator" / "__pycache__" / "handler.cpython-313.pyc").is_file()
    assert (tree / "botocore" / "__pycache__" / "client.cpython-313.pyc").is_file()
    # only the API models of the services the function calls
    assert sorted(p.name for p in (tree / "botocore" / "data").iterdir() if p.is_dir()) == sorted(
        bundle.BOTOCORE_SERVICES
    )
    load = (
        "import botocore.session as s; x = s.get_session(); "
        f"[x.create_client(n, region_name='us-east-1') for n in {list(bundle.BOTOCORE_SERVICES)!r}]"
    )
    env = {**os.environ, "PYTHONPATH": str(tree), "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}
    subprocess.run([sys.executable, "-c", load], env=env, check=True, timeout=120)
    assert bundle.unpruned_imports(tree) == []
    size = bundle.zip_size(tree)
    unzipped = bundle.tree_size(tree) / 1e6
    print(f"\nnpx cdk synth: {seconds:.1f} s; bundle {unzipped:.1f} MB, zip {size / 1e6:.1f} MB")
    assert size <= ZIP_GOAL_BYTES


def test_repeated_synth_reuses_the_staged_asset(
    synthesized: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    outdir, first, _ = synthesized
    assert first.returncode == 0
    # the other documented entry point (docs/deploy.md): the same CLI without npx
    again = cdk_synth(outdir, "clusters=prod", "alarmEmail=oncall@example.com", cli=(str(REPO_ROOT / "infra/bin/cdk"),))
    assert again.returncode == 0, again.stderr[-4000:]
    assert "Bundling asset" not in again.stderr  # same inputs, same asset hash: nothing rebuilt


def _warnings(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if re.search(r"(?i)\bwarn(ing)?\b", line)]


def test_the_documented_one_cluster_synth_prints_no_warning(
    synthesized: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    _, result, _ = synthesized
    assert result.returncode == 0, result.stderr[-4000:]
    assert _warnings(result) == []


@pytest.mark.parametrize("context", [DOCUMENTED_VPC, DOCUMENTED_CONFIG_MAP], ids=["vpc", "config-map"])
def test_the_documented_synths_print_no_warning(context: dict[str, str], tmp_path: Path) -> None:
    """A warning the user cannot act on teaches them to ignore warnings (docs/deploy.md's commands, as typed)."""
    result = cdk_synth(tmp_path, *(f"{key}={value}" for key, value in context.items()))
    assert result.returncode == 0, result.stderr[-4000:]
    assert _warnings(result) == []


def test_bad_context_fails_npx_synth_naming_the_key(tmp_path: Path) -> None:
    result = cdk_synth(tmp_path, "clusters=*")
    assert result.returncode != 0
    assert "invalid CDK context 'clusters'" in result.stderr

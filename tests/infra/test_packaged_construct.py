"""The construct as a platform team uses it: the wheel built from infra/pyproject.toml, installed into a fresh
virtual environment (no repository on sys.path), synthesizing examples/own-cdk-app with the code asset bundled."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infra import bundle
from tests.infra.conftest import NODE_BIN, REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "own-cdk-app"


# the Makefile's pinned uv, when the test runs without make
PINNED_UV = Path.home() / ".cache" / "drain-orchestrator" / "uv-0.13.8" / "bin" / "uv"


def _uv() -> str:
    uv = os.environ.get("UV") or (str(PINNED_UV) if PINNED_UV.exists() else shutil.which("uv"))
    if not uv:
        pytest.fail("needs uv: run `make setup-python` (pinned uv) or put uv on PATH")
    return uv


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the built wheel and its dependencies, resolved from the package registry.

    Never `--offline`: `uv sync --frozen` fills uv's wheel cache but not the index metadata an offline resolution
    needs, so an offline install passes only where earlier work happened to warm the cache."""
    work = tmp_path_factory.mktemp("packaged")
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    _run([_uv(), "build", "infra", "--wheel", "--out-dir", str(work / "dist")], cwd=REPO_ROOT, env=env)
    (wheel,) = (work / "dist").glob("drain_orchestrator_cdk-*.whl")
    venv = work / "venv"
    # on the interpreter running the tests (Python 3.13, like the Lambda runtime the bundle compiles for)
    _run([_uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=work, env=env)
    _run([_uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)],
         cwd=work, env=env)  # fmt: skip
    return venv


def test_example_app_synthesizes_from_the_installed_package(installed: Path, tmp_path: Path) -> None:
    app_dir = tmp_path / "app"
    shutil.copytree(EXAMPLE, app_dir)
    out = tmp_path / "cdk.out"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        "PATH": f"{NODE_BIN}{os.pathsep}{installed / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "UV": _uv(),
        "CDK_OUTDIR": str(out),
        # the pruned dependency tree is the same as the repository's (same lock): reuse it instead of reinstalling
        "DRAIN_ORCHESTRATOR_BUNDLE_CACHE": str(bundle.CACHE_ROOT),
    }
    python = str(installed / "bin" / "python")

    # the installed construct finds the function's sources inside the package, not in this checkout
    probe = "from drain_orchestrator_cdk import bundle; print(bundle.SOURCE_ROOT); print(bundle.bundle_key())"
    source_root, key = _run([python, "-c", probe], cwd=app_dir, env=env).split()
    assert Path(source_root).is_relative_to(installed)
    assert key == bundle.bundle_key()  # same inputs as this repository's app: the same code asset

    _run([python, "app.py"], cwd=app_dir, env=env)

    template = json.loads((out / "NodeLifecycle.template.json").read_text())
    resources = template["Resources"].values()
    (function,) = [r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::Function"]
    assert function["Handler"] == "drain_orchestrator.handler.handler"
    hooks = sorted(r["Properties"]["AutoScalingGroupName"] for r in resources
                   if r["Type"] == "AWS::AutoScaling::LifecycleHook")  # fmt: skip
    assert hooks == ["eks-general-1a2b3c", "eks-spot-4d5e6f"]
    (entry,) = [r["Properties"] for r in resources if r["Type"] == "AWS::EKS::AccessEntry"]
    assert entry["ClusterName"] == "prod-eu"
    # the team's paging topic was added to every alarm, beside the construct's own alarm topic
    for alarm in (r["Properties"] for r in resources if r["Type"] == "AWS::CloudWatch::Alarm"):
        assert len(alarm["AlarmActions"]) == 2
    (asset,) = out.glob("asset.*")
    shipped = asset / "drain_orchestrator" / "handler.py"
    assert shipped.read_bytes() == (REPO_ROOT / "lambda_src" / "drain_orchestrator" / "handler.py").read_bytes()
    assert (asset / "botocore").is_dir() and (asset / "kubernetes").is_dir()

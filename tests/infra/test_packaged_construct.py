"""The construct as a platform team uses it: the wheel built from infra/pyproject.toml, installed into fresh virtual
environments (no repository on sys.path) at both ends of the dependency ranges it claims, synthesizing
examples/own-cdk-app with the code asset bundled and cdk-nag's AwsSolutions rules applied.

- oldest: Python 3.12 (the CDK side's minimum), the lowest version of each dependency infra/pyproject.toml declares
  (aws-cdk-lib, constructs), cdk-nag 2.x
- newest: Python 3.13, the aws-cdk-lib of this repository's lock, cdk-nag 3.x
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra import bundle
from tests.infra.conftest import NODE_BIN, REPO_ROOT, uv

# two installs and two bundled synths: minutes on a loaded machine
pytestmark = [pytest.mark.long_running, pytest.mark.timeout(1200)]

EXAMPLE = REPO_ROOT / "examples" / "own-cdk-app"
PYENV_VERSIONS = Path.home() / ".pyenv" / "versions"


def _python312() -> str:
    """Found like the Makefile finds 3.13: pyenv's versions, then python3.12 on PATH; each candidate is run once."""
    candidates = sorted(str(p) for p in PYENV_VERSIONS.glob("3.12*/bin/python3.12"))
    candidates += [p for p in [shutil.which("python3.12")] if p]
    for candidate in candidates:
        check = [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"]
        if subprocess.run(check, capture_output=True, timeout=30, check=False).returncode == 0:
            return candidate
    pytest.fail(
        "needs Python 3.12 (the oldest Python the construct supports): looked for "
        f"{PYENV_VERSIONS}/3.12*/bin/python3.12 and python3.12 on PATH; install it, e.g. `pyenv install 3.12`"
    )


def _declared_minimums() -> dict[str, str]:
    """Each dependency of infra/pyproject.toml -> the lowest version it declares (``name>=X,<Y``)."""
    project = tomllib.loads((REPO_ROOT / "infra" / "pyproject.toml").read_text())["project"]
    minimums = {}
    for spec in project["dependencies"]:
        found = re.fullmatch(r"([a-z0-9-]+)>=([\d.]+),<[\d.]+", spec)
        assert found, f"expected NAME>=X,<Y in infra/pyproject.toml's dependencies, got {spec!r}"
        minimums[found.group(1)] = found.group(2)
    return minimums


def _locked(name: str) -> str:
    lock = tomllib.loads((REPO_ROOT / "uv.lock").read_text())
    (version,) = [p["version"] for p in lock["package"] if p["name"] == name]
    return str(version)


def _normalized(version: str) -> tuple[int, ...]:
    """``10`` and ``10.0.0`` name the same release."""
    parts = [int(p) for p in version.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@dataclass(frozen=True)
class Combination:
    python: str
    pins: dict[str, str]  # name -> the exact version installed
    cdk_nag: str  # a requirement range


def _combinations() -> dict[str, Combination]:
    return {
        "oldest": Combination(_python312(), _declared_minimums(), "cdk-nag>=2,<3"),
        "newest": Combination(sys.executable, {"aws-cdk-lib": _locked("aws-cdk-lib")}, "cdk-nag>=3,<4"),
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    _run([uv(), "build", "infra", "--wheel", "--out-dir", str(work)], cwd=REPO_ROOT, env=env)
    (built,) = work.glob("drain_orchestrator_cdk-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """One virtual environment per combination, shared by this module's tests."""
    venvs: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in venvs:
            venv = tmp_path_factory.mktemp(f"packaged-{name}") / "venv"
            _install(wheel, _combinations()[name], venv)
            venvs[name] = venv
        return venvs[name]

    return get


def _install(wheel: Path, combination: Combination, venv: Path) -> None:
    """The wheel and its dependencies, resolved from the package registry.

    Never `--offline`: `uv sync --frozen` fills uv's wheel cache but not the index metadata an offline resolution
    needs, so an offline install passes only where earlier work happened to warm the cache."""
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    _run([uv(), "venv", "--quiet", "--python", combination.python, str(venv)], cwd=venv.parent, env=env)
    requirements = [str(wheel), *(f"{name}=={v}" for name, v in combination.pins.items()), combination.cdk_nag]
    _run([uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), *requirements],
         cwd=venv.parent, env=env)  # fmt: skip


@pytest.mark.parametrize("name", ["oldest", "newest"])
def test_example_app_synthesizes_from_the_installed_package(
    installed: Callable[[str], Path], name: str, tmp_path: Path
) -> None:
    combination = _combinations()[name]
    venv = installed(name)
    app_dir = tmp_path / "app"
    shutil.copytree(EXAMPLE, app_dir)
    out = tmp_path / "cdk.out"
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        "PATH": f"{NODE_BIN}{os.pathsep}{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "UV": uv(),
        "CDK_OUTDIR": str(out),
        # the pruned dependency tree is the same as the repository's (same lock): reuse it instead of reinstalling
        "DRAIN_ORCHESTRATOR_BUNDLE_CACHE": str(bundle.CACHE_ROOT),
        # the Lambda runtime's Python, which compiles the bundle's bytecode when the app runs on 3.12
        bundle.PYTHON_VARIABLE: sys.executable,
    }
    python = str(venv / "bin" / "python")

    # the installed construct finds the function's sources inside the package, not in this checkout
    probe = (
        "import sys, aws_cdk, importlib.metadata as m; from drain_orchestrator_cdk import bundle; "
        "print(bundle.SOURCE_ROOT, bundle.bundle_key(), '%d.%d' % sys.version_info[:2], m.version('cdk-nag'), "
        f"*(m.version(n) for n in {sorted(combination.pins)!r}))"
    )
    source_root, key, python_version, nag_version, *pinned = _run([python, "-c", probe], cwd=app_dir, env=env).split()
    assert Path(source_root).is_relative_to(venv)
    assert key == bundle.bundle_key()  # same inputs as this repository's app: the same code asset
    assert python_version == ("3.12" if name == "oldest" else "3.13")
    # what was installed is what the combination names (a declared minimum that does not install fails above)
    assert [_normalized(v) for v in pinned] == [_normalized(combination.pins[n]) for n in sorted(combination.pins)]
    assert nag_version.startswith("2." if name == "oldest" else "3.")
    assert (Path(source_root).parent.parent / "py.typed").is_file()  # typed package for the app's type checker

    _run([python, "app.py"], cwd=app_dir, env=env)

    manifest = json.loads((out / "manifest.json").read_text())
    messages = [
        (entry["type"], path, entry.get("data"))
        for artifact in manifest["artifacts"].values()
        for path, entries in artifact.get("metadata", {}).items()
        for entry in entries
        if entry["type"] in ("aws:cdk:error", "aws:cdk:warning")
    ]
    assert messages == []  # cdk-nag 2.x reports findings as errors here; 3.x fails the synth itself
    if name == "oldest":  # cdk-nag 2.x really ran, and found only what the construct acknowledges
        (csv,) = out.glob("AwsSolutions-*NodeLifecycle-NagReport.csv")
        report = csv.read_text()
        assert '"Suppressed"' in report and '"Non-Compliant"' not in report, report
    else:
        (plugin,) = [p for p in json.loads((out / "validation-report.json").read_text())["pluginReports"]
                     if p["pluginName"] == "AwsSolutions"]  # fmt: skip
        assert plugin["violations"] == [] and plugin["suppressedViolations"]

    template = json.loads((out / "NodeLifecycle.template.json").read_text())
    resources = template["Resources"].values()
    functions = {r["Properties"]["Handler"]: r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::Function"}
    # the drain function, and the one that applies the RBAC with the deploy (infra/rbac_applier.py)
    assert sorted(functions) == ["drain_orchestrator.handler.handler", "drain_orchestrator.rbac_resource.handler"]
    function = functions["drain_orchestrator.handler.handler"]
    assert function["Environment"]["Variables"]["DRAIN_GRACE_PERIOD"] == "30"
    # grant_approve on the team's on-call role: one action on the function and its versions, nag acknowledged
    (on_call,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::IAM::Role" and "OnCall" in k]
    (grant,) = [r["Properties"]["PolicyDocument"]["Statement"] for r in resources
                if r["Type"] == "AWS::IAM::Policy" and {"Ref": on_call} in r["Properties"]["Roles"]]  # fmt: skip
    assert [s["Action"] for s in grant] == ["lambda:SendDurableExecutionCallbackSuccess"]
    hooks = sorted(r["Properties"]["AutoScalingGroupName"] for r in resources
                   if r["Type"] == "AWS::AutoScaling::LifecycleHook")  # fmt: skip
    assert hooks == ["eks-general-1a2b3c", "eks-spot-4d5e6f"]
    entries = [r["Properties"] for r in resources if r["Type"] == "AWS::EKS::AccessEntry"]
    assert sorted((e["ClusterName"], "AccessPolicies" in e) for e in entries) == [("prod-eu", False), ("prod-eu", True)]
    # the team's paging topic was added to every alarm, beside the construct's own alarm topic
    for alarm in (r["Properties"] for r in resources if r["Type"] == "AWS::CloudWatch::Alarm"):
        assert len(alarm["AlarmActions"]) == 2
    (asset,) = out.glob("asset.*")
    shipped = asset / "drain_orchestrator" / "handler.py"
    assert shipped.read_bytes() == (REPO_ROOT / "lambda_src" / "drain_orchestrator" / "handler.py").read_bytes()
    assert (asset / "drain_orchestrator" / "__pycache__" / "handler.cpython-313.pyc").is_file()
    assert (asset / "botocore").is_dir() and (asset / "urllib3").is_dir() and not (asset / "kubernetes").exists()


def test_the_oldest_python_finds_a_runtime_python_for_the_bytecode(
    installed: Callable[[str], Path], tmp_path: Path
) -> None:
    """On 3.12 the bundler looks for 3.13 itself (PATH, pyenv, uv) when no interpreter is named."""
    venv = installed("oldest")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", bundle.PYTHON_VARIABLE)}
    found = _run([str(venv / "bin" / "python"), "-c", "from drain_orchestrator_cdk import bundle; "
                  "print(bundle.bytecode_python())"], cwd=tmp_path, env={**env, "UV": uv()}).strip()  # fmt: skip
    version = _run([found, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], cwd=tmp_path, env=env)
    assert version.strip() == "3.13"

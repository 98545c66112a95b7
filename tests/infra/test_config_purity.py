"""Synth-time validation loads only the function's pure settings modules (in a fresh interpreter, like a CDK app),
and a settings module that stops being pure fails the synth."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.infra.conftest import REPO_ROOT


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter with only the repository root on sys.path (not lambda_src/), like a CDK app."""
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env={**clean, **env}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def test_synth_time_validation_loads_only_the_pure_settings_modules() -> None:
    code = """
import sys
sys.path = [p for p in sys.path if not p.endswith("lambda_src")]
from infra.config import OrchestratorConfig
OrchestratorConfig(clusters=("a",), drain_settings={"WAIT_FOR_DEREGISTRATION": "never"})
heavy = ("boto3", "botocore", "kubernetes", "pydantic", "aws_lambda_powertools", "aws_durable_execution_sdk_python")
heavy = sorted(m for m in sys.modules if m.partition(".")[0] in heavy)
print(heavy, [m for m in sys.modules if m.startswith("drain_orchestrator")])
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr
    # nothing heavy imported, and the function's package does not stay in sys.modules (a user's app may have its own)
    assert done.stdout.strip() == "[] []"


def test_a_settings_module_that_stops_being_pure_fails_the_synth(tmp_path: Path) -> None:
    app_root = tmp_path / "app"
    shutil.copytree(REPO_ROOT / "lambda_src", app_root / "lambda_src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copy(REPO_ROOT / name, app_root / name)
    settings = app_root / "lambda_src" / "drain_orchestrator" / "workflow_settings.py"
    settings.write_text(
        settings.read_text().replace("import re\n", "import re\nimport drain_orchestrator.workflow\n", 1)
    )
    code = "from infra.config import OrchestratorConfig; OrchestratorConfig(clusters=('a',))"
    done = _python(code, DRAIN_ORCHESTRATOR_APP_ROOT=str(app_root))
    assert done.returncode != 0
    assert "drain_orchestrator.workflow_settings imports drain_orchestrator.workflow" in done.stderr
    assert "must stay pure" in done.stderr

"""examples/typescript-cdk: a TypeScript CDK app that includes the released CloudFormation template with
`CfnInclude`, compiled with the pinned TypeScript and synthesized with the pinned Node and aws-cdk-lib (package.json).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from drain_orchestrator import __version__

from .conftest import NODE_BIN, REPO_ROOT

# the first test to ask for the template builds it (about 20 synths: minutes on a loaded machine)
pytestmark = [pytest.mark.long_running, pytest.mark.timeout(900)]

EXAMPLE = REPO_ROOT / "examples" / "typescript-cdk"


def _node(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    done = subprocess.run(
        [str(NODE_BIN / "node"), *argv], capture_output=True, text=True, timeout=600, env=env, cwd=cwd, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_typescript_app_synthesizes_the_released_template(released: dict[str, Any], tmp_path: Path) -> None:
    template_file = tmp_path / "drain-orchestrator.template.json"
    template_file.write_text(json.dumps(released))
    _node(str(REPO_ROOT / "node_modules" / "typescript" / "bin" / "tsc"), "-p", str(EXAMPLE), "--outDir", str(tmp_path))
    context = {"templateFile": str(template_file), "clusterName": "prod", "codeBucket": "my-artifacts",
               "alarmEmail": "oncall@example.com"}  # fmt: skip
    env = {
        "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}",
        "NODE_PATH": str(REPO_ROOT / "node_modules"),  # the compiled app is outside the checkout
        "CDK_OUTDIR": str(tmp_path / "cdk.out"),
        "CDK_CONTEXT_JSON": json.dumps(context),
    }
    _node(str(tmp_path / "app.js"), env=env, cwd=tmp_path)

    synthesized = json.loads((tmp_path / "cdk.out" / "DrainOrchestrator.template.json").read_text())
    resources = synthesized["Resources"]
    assert {k: r["Type"] for k, r in resources.items() if r["Type"] != "AWS::CDK::Metadata"} == {
        k: r["Type"] for k, r in released["Resources"].items()
    }
    # the parameters the app passes are values now; the others stay parameters with their defaults
    given = {"ClusterName", "CodeBucket", "AlarmEmail"}
    assert set(synthesized["Parameters"]) == (set(released["Parameters"]) - given) | {"BootstrapVersion"}
    (function,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::Function"
                   and r["Properties"]["Handler"] == "drain_orchestrator.handler.handler"]  # fmt: skip
    assert function["Environment"]["Variables"]["CLUSTER_NAMES"] == "prod"
    assert function["Code"]["S3Bucket"] == "my-artifacts"
    assert function["Code"]["S3Key"] == {"Ref": "CodeKey"}
    subscription = next(r for r in resources.values() if r["Type"] == "AWS::SNS::Subscription")
    assert subscription["Properties"]["Endpoint"] == "oncall@example.com"


def test_the_typescript_app_names_this_release() -> None:
    """Without `-c templateFile`, the app includes this release's template (and its comment uploads its zip)."""
    app = (EXAMPLE / "app.ts").read_text()
    assert f'"drain-orchestrator-{__version__}.template.json"' in app
    assert f"drain-orchestrator-lambda-{__version__}.zip" in app

"""The command line installs outside a checkout as docs/releases.md says: `uv tool install` of the root project's
wheel with its extra `invoke` into a temporary tool directory gives a working `drain-orchestrator` entry point:
its version is the release's, `rbac apply` finds the release's manifests inside the wheel, and `invoke` runs the
handler under the durable local runner. Dependencies come from the registry (never `--offline`: see
test_packaged_construct.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from drain_orchestrator import __version__
from tests.infra.conftest import REPO_ROOT, uv


def test_uv_tool_install_of_the_wheel_gives_a_working_command(tmp_path: Path) -> None:
    tools, bin_dir, elsewhere = tmp_path / "tools", tmp_path / "bin", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        "UV_TOOL_DIR": str(tools),
        "UV_TOOL_BIN_DIR": str(bin_dir),
        "UV_PYTHON_DOWNLOADS": "never",
    }
    subprocess.run(
        [uv(), "build", "--wheel", "--out-dir", str(tmp_path / "dist")],
        cwd=REPO_ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    wheel = tmp_path / "dist" / f"drain_orchestrator-{__version__}-py3-none-any.whl"
    assert wheel.is_file(), sorted(p.name for p in (tmp_path / "dist").iterdir())
    subprocess.run(
        [uv(), "tool", "install", "--quiet", "--python", sys.executable, f"{wheel}[invoke]"],
        cwd=elsewhere,
        env=env,
        check=True,
        timeout=600,
    )
    command = bin_dir / "drain-orchestrator"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(command), *args], cwd=elsewhere, env=env, capture_output=True, text=True, check=False, timeout=120
        )

    assert run("--version").stdout == f"drain-orchestrator {__version__}\n"
    helped = run("--help")
    assert helped.returncode == 0, helped.stderr
    commands = helped.stdout.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    listed = {line.split()[0] for line in commands.splitlines()[1:] if line.startswith("    ")}
    assert {"explain", "invoke", "drain", "uncordon", "status", "rbac", "history"} <= listed
    # the handler under the durable local runner (the extra), on an event it ignores: no AWS call is made
    event = shutil.copy(REPO_ROOT / "events" / "unsupported-ebs-snapshot.json", elsewhere)
    invoked = subprocess.run(
        [str(command), "invoke", str(event), "--dry-run"],
        cwd=elsewhere, env={"PATH": "/usr/bin:/bin", "HOME": str(elsewhere), "CLUSTER_NAMES": "blue",
                            "AWS_REGION": "eu-west-1"},
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert invoked.returncode == 0, invoked.stderr
    assert json.loads(invoked.stdout) == {
        "status": "SUCCEEDED",
        "result": {
            "event_id": "01234567-0123-0123-0123-012345678901",
            "ignored": "unsupported",
            "message": "detail-type 'EBS Snapshot Notification' is not handled",
            "instances": [],
        },
    }
    assert '"message":"event ignored"' in invoked.stderr  # the handler's log line, off stdout
    # the wheel carries the release's RBAC manifest: `rbac apply` finds it outside a checkout, byte for byte the
    # checkout's, and goes on to the cluster (none here: it names the missing cluster, not the manifest)
    python = tools / "drain-orchestrator" / "bin" / "python"
    found = subprocess.run(
        [str(python), "-c", "from drain_orchestrator.cli.rbac import shipped_manifests; print(*shipped_manifests())"],
        cwd=elsewhere, env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    manifests = [Path(p) for p in found.stdout.split()]
    assert [m.name for m in manifests] == ["rbac.yaml", "flowschema.yaml"]
    for manifest in manifests:
        assert tools in manifest.parents, manifest
        assert manifest.read_bytes() == (REPO_ROOT / "infra" / "k8s" / manifest.name).read_bytes()
    unreachable = run("rbac", "apply", "--dry-run", "--kubeconfig", str(elsewhere / "missing-kubeconfig"))
    assert unreachable.returncode != 0
    assert "manifest was not found" not in unreachable.stderr and "missing-kubeconfig" in unreachable.stderr

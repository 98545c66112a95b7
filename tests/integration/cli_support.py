"""Running the `drain-orchestrator` command as a user would: a subprocess of this Python, from the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from testbed.bed import REPO

PYTHONPATH = f"{REPO / 'lambda_src'}:{REPO}"


def run_cli(
    *args: str, env: Mapping[str, str] | None = None, inherit: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`drain-orchestrator <args>`; with ``inherit=False`` the command sees only ``env`` (and PYTHONPATH)."""
    base = dict(os.environ) if inherit else {}
    return subprocess.run(
        [sys.executable, "-m", "drain_orchestrator.cli", *args],
        cwd=REPO,
        env={**base, **(env or {}), "PYTHONPATH": PYTHONPATH},
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def invoke_report(stdout: str) -> dict[str, Any]:
    """The JSON report of `invoke`: the last document on stdout, after the handler's EMF and log lines."""
    marker = '\n{\n  "status"'
    report: dict[str, Any] = json.loads(stdout[stdout.rindex(marker) + 1 :] if marker in stdout else stdout)
    return report

"""`make -s env`: export lines a shell can eval as they are, and a clear message when no bed is running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testbed.bed import REPO
from testbed.local_env import export_lines


def test_export_lines_survive_eval_with_awkward_values() -> None:
    values = {"CLUSTER_NAMES": "blue", "AWS_SECRET_ACCESS_KEY": "a/b+c d'e\"f$g"}
    script = "\n".join([*export_lines(values), 'printf "%s\\n" "$AWS_SECRET_ACCESS_KEY" "${PATH%%:*}"'])

    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()

    assert out == [values["AWS_SECRET_ACCESS_KEY"], str(REPO / ".venv" / "bin")]


def test_env_without_a_running_bed_says_how_to_start_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "testbed", "env", "--dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""  # nothing for eval to run
    assert f"no test bed running in {tmp_path}" in done.stderr and "make cluster-up" in done.stderr

"""Where the test bed's binaries are: built once per machine by build/build-bins.sh into a cache outside the repo
(keyed by versions); the script is a no-op when they are present and fails with a clear message without Go.
DRAIN_TESTBED_KUBE_VERSION selects the Kubernetes version of the control plane (build/k8s/v<version>/go.mod);
unset, the script's DEFAULT_KUBE_VERSION, the one CI runs. An unknown version fails with the versions available."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = REPO / "build" / "build-bins.sh"
KUBE_VERSION_VAR = "DRAIN_TESTBED_KUBE_VERSION"


def selected_kube_version() -> str:
    """The Kubernetes version the bed runs, "v1.Y.Z": the variable's, else the build script's default (its one home)."""
    chosen = os.environ.get(KUBE_VERSION_VAR)
    if not chosen:
        found = re.search(r"^DEFAULT_KUBE_VERSION=(\S+)$", BUILD_SCRIPT.read_text(), re.MULTILINE)
        if found is None:
            raise RuntimeError(f"{BUILD_SCRIPT} sets no DEFAULT_KUBE_VERSION")
        chosen = found.group(1)
    return "v" + chosen.removeprefix("v")


@dataclass(frozen=True)
class BinDir:
    path: Path

    @property
    def etcd(self) -> Path:
        return self.path / "etcd"

    @property
    def kube_apiserver(self) -> Path:
        return self.path / "kube-apiserver"

    @property
    def kube_controller_manager(self) -> Path:
        return self.path / "kube-controller-manager"

    @property
    def kube_scheduler(self) -> Path:
        return self.path / "kube-scheduler"

    @property
    def kwok(self) -> Path:
        return self.path / "kwok"

    @property
    def lambda_rie(self) -> Path:
        """The AWS Lambda Runtime Interface Emulator (testbed/runtime.py)."""
        return self.path / "aws-lambda-rie"

    @property
    def kwok_stages(self) -> Path:
        return self.path / "kwok-stages"

    @property
    def kube_version(self) -> str:
        """The Kubernetes version these control-plane binaries were built as (the stamp build-bins.sh wrote)."""
        return (self.path / ".kube-apiserver.stamp").read_text().strip()


def locate_binaries() -> BinDir:
    """Build (or find cached) binaries; raises with the build's output when that fails."""
    override = os.environ.get("DRAIN_TESTBED_BIN")
    if override:
        bins = BinDir(Path(override))
        wanted = os.environ.get(KUBE_VERSION_VAR)
        stamp = bins.path / ".kube-apiserver.stamp"
        if wanted and stamp.is_file() and bins.kube_version != selected_kube_version():
            raise RuntimeError(
                f"DRAIN_TESTBED_BIN={override} holds Kubernetes {bins.kube_version}, but "
                f"{KUBE_VERSION_VAR}={wanted} selects {selected_kube_version()}: unset one of them"
            )
        return bins
    proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"building the test bed's binaries failed (exit {proc.returncode}); run `bash {BUILD_SCRIPT}` to see "
            f"the full output.\n{proc.stderr[-4000:]}"
        )
    return BinDir(Path(proc.stdout.strip().splitlines()[-1]))

"""The bed's Kubernetes version is chosen by DRAIN_TESTBED_KUBE_VERSION among the wrapper modules build/k8s/v*/:
an unknown one stops the build before any work with the variable's name and the versions available, and each
wrapper module builds the version its directory names (its staging modules at the matching v0.Y.Z)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from testbed.binaries import BUILD_SCRIPT, KUBE_VERSION_VAR, REPO, locate_binaries, selected_kube_version

K8S_MODULES = REPO / "build" / "k8s"


def _versions() -> list[str]:
    return sorted(p.parent.name for p in K8S_MODULES.glob("v*/go.mod"))


def _build(tmp_path: Path, version: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, KUBE_VERSION_VAR: version, "DRAIN_TESTBED_CACHE": str(tmp_path / "cache")}
    return subprocess.run(["bash", str(BUILD_SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("version", ["1.99.0", "1.36", "latest", "v1.35.4; rm -rf /"])
def test_an_unknown_version_fails_naming_the_variable_and_the_versions_available(tmp_path: Path, version: str) -> None:
    proc = _build(tmp_path, version)
    assert proc.returncode == 2, proc.stderr
    assert KUBE_VERSION_VAR in proc.stderr
    available = re.search(r"Versions available: ([0-9. ]+) \(default", proc.stderr)
    assert available is not None, proc.stderr
    assert available.group(1).split() == [v.removeprefix("v") for v in _versions()]
    assert proc.stdout == ""
    assert not (tmp_path / "cache").exists(), "nothing is built or locked for an unknown version"


def test_the_default_is_a_version_of_the_range_and_the_variable_overrides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KUBE_VERSION_VAR, raising=False)
    assert selected_kube_version() in _versions()
    newest = _versions()[-1]
    monkeypatch.setenv(KUBE_VERSION_VAR, newest.removeprefix("v"))
    assert selected_kube_version() == newest
    monkeypatch.setenv(KUBE_VERSION_VAR, newest)
    assert selected_kube_version() == newest


@pytest.mark.parametrize("version", _versions())
def test_each_wrapper_module_builds_the_version_its_directory_names(version: str) -> None:
    go_mod = (K8S_MODULES / version / "go.mod").read_text()
    assert re.search(rf"^\s*k8s\.io/kubernetes {re.escape(version)}\b", go_mod, re.MULTILINE)
    minor, patch = version.removeprefix("v1.").split(".")
    replaced = re.findall(r"^\s*(k8s\.io/\S+) => (k8s\.io/\S+) (\S+)$", go_mod, re.MULTILINE)
    assert replaced, "k8s.io/kubernetes' staging modules need replace lines (its own point at ./staging)"
    for module, target, at in replaced:
        assert module == target
        assert at == f"v0.{minor}.{patch}", f"{module} replaced at {at} in {version}"
    assert {"k8s.io/api", "k8s.io/apiserver", "k8s.io/client-go"} <= {m for m, _, _ in replaced}
    assert (K8S_MODULES / version / "go.sum").is_file()


def test_binaries_given_by_path_must_be_the_selected_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".kube-apiserver.stamp").write_text("v1.35.4")
    monkeypatch.setenv("DRAIN_TESTBED_BIN", str(tmp_path))
    monkeypatch.setenv(KUBE_VERSION_VAR, "1.35.4")
    assert locate_binaries().kube_version == "v1.35.4"
    monkeypatch.setenv(KUBE_VERSION_VAR, "1.36.3")
    with pytest.raises(RuntimeError, match=rf"holds Kubernetes v1\.35\.4, but {KUBE_VERSION_VAR}=1\.36\.3"):
        locate_binaries()

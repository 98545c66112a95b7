"""The one factory to an apiserver: which kubeconfig it reads, a direct connection for token users, and a clear
refusal of an ambiguous target."""

from __future__ import annotations

from pathlib import Path

import pytest

from drain_orchestrator.kube.connect import connect
from drain_orchestrator.kube.kubeconfig import KubeconfigNotFound, kubeconfig_files
from tests.unit.test_kubeconfig import USERS, write


def test_the_files_read_are_kubectls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = write(tmp_path / "1", USERS), write(tmp_path / "2", USERS)
    monkeypatch.setenv("KUBECONFIG", f"{one}:{tmp_path / 'missing'}::{two}:{one}")
    assert kubeconfig_files() == [one, two]  # in order, missing and repeated entries skipped
    assert kubeconfig_files(two) == [two]  # --kubeconfig: that file alone
    with pytest.raises(KubeconfigNotFound, match=r"^kubeconfig .*/missing: no such file"):
        kubeconfig_files(tmp_path / "missing")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{tmp_path / 'gone'}")
    with pytest.raises(KubeconfigNotFound, match=r"^KUBECONFIG=.*: none of its files exists"):
        kubeconfig_files()
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(KubeconfigNotFound, match=rf"KUBECONFIG is not set and {tmp_path}/.kube/config does not"):
        kubeconfig_files()
    (tmp_path / ".kube").mkdir()
    home = write(tmp_path / ".kube", USERS)
    home.rename(tmp_path / ".kube" / "config")
    assert kubeconfig_files() == [tmp_path / ".kube" / "config"]


def test_kubeconfig_token_user_gets_a_direct_connection(tmp_path: Path) -> None:
    kube = connect(kubeconfig=write(tmp_path, USERS), pool_size=3)
    try:
        assert kube.api_client is None and kube.connection is not None
        assert kube.connection.host == "https://k.example:6443"
        assert kube.connection.pool.connection_pool_kw["maxsize"] == 3
    finally:
        kube.close()


def test_without_a_target_the_kubeconfig_of_the_environment_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write(tmp_path, USERS)))
    kube = connect()
    try:
        assert kube.connection is not None and kube.connection.headers == {"Authorization": "Bearer abc"}
    finally:
        kube.close()


def test_a_cluster_and_a_kubeconfig_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="either cluster"):
        connect(cluster="blue", kubeconfig=write(tmp_path, USERS))
    with pytest.raises(ValueError, match="either cluster"):
        connect(cluster="blue", context="a")

"""The one factory to an apiserver: which kubeconfig it reads, a direct connection for token users, and a clear
refusal of an ambiguous target."""

from __future__ import annotations

from pathlib import Path

import pytest

from drain_orchestrator.kube.connect import connect, default_kubeconfig
from tests.unit.test_kubeconfig import USERS, write


def test_default_kubeconfig_is_kubeconfig_else_the_home_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/etc/k/config")
    assert default_kubeconfig() == "/etc/k/config"
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", "/home/op")
    assert default_kubeconfig() == "/home/op/.kube/config"


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

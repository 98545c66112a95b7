"""The CLI's direct kubeconfig connection: token users, context selection, exec plugins left to the client, several
files merged as kubectl merges them."""

from __future__ import annotations

import json
from pathlib import Path

from drain_orchestrator.kube.kubeconfig import connection_from_kubeconfig, merge_kubeconfigs


def write(tmp_path: Path, users: list[dict[str, object]], current: str = "a") -> Path:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [{"name": "c", "cluster": {"server": "https://k.example:6443/", "insecure-skip-tls-verify": True}}],
        "users": users,
        "contexts": [
            {"name": "a", "context": {"cluster": "c", "user": "tok"}},
            {"name": "b", "context": {"cluster": "c", "user": "eks"}},
        ],
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(cfg))
    return path


USERS: list[dict[str, object]] = [
    {"name": "tok", "user": {"token": "abc"}},
    {"name": "eks", "user": {"exec": {"command": "aws", "args": ["eks", "get-token"]}}},
]


def test_token_user_gets_a_bearer_header_and_the_server_without_trailing_slash(tmp_path: Path) -> None:
    conn = connection_from_kubeconfig(write(tmp_path, USERS))
    assert conn is not None
    assert conn.host == "https://k.example:6443"
    assert conn.headers == {"Authorization": "Bearer abc"}


def test_exec_plugin_users_fall_back_to_the_generated_client(tmp_path: Path) -> None:
    assert connection_from_kubeconfig(write(tmp_path, USERS), context="b") is None


def test_yaml_kubeconfig_is_read_too(tmp_path: Path) -> None:
    path = write(tmp_path, USERS)
    import yaml

    path.write_text(yaml.safe_dump(json.loads(path.read_text())))
    conn = connection_from_kubeconfig(path)
    assert conn is not None and conn.headers["Authorization"] == "Bearer abc"


def test_several_files_merge_as_kubectl_merges_them(tmp_path: Path) -> None:
    first = write(tmp_path / "first", [{"name": "tok", "user": {"token": "first"}}])
    second = tmp_path / "second" / "kubeconfig"
    second.parent.mkdir()
    second.write_text(
        json.dumps(
            {
                "current-context": "other",
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://ignored.example"}},
                    {"name": "d", "cluster": {"server": "https://d.example", "certificate-authority": "ca.pem"}},
                ],
                "users": [{"name": "tok", "user": {"token": "second"}}, {"name": "d-user", "user": {"token": "d"}}],
                "contexts": [
                    {"name": "a", "context": {"cluster": "d", "user": "d-user"}},
                    {"name": "other", "context": {"cluster": "d", "user": "d-user"}},
                ],
            }
        )
    )
    merged = merge_kubeconfigs([first, second])
    assert merged["current-context"] == "a"  # the first file to set it
    assert [c["name"] for c in merged["contexts"]] == ["a", "b", "other"]  # the first file's "a" wins it whole
    (d,) = [c["cluster"] for c in merged["clusters"] if c["name"] == "d"]
    assert d["certificate-authority"] == str(second.parent / "ca.pem")  # relative to the file defining it

    conn = connection_from_kubeconfig([first, second])
    assert conn is not None and conn.host == "https://k.example:6443"
    assert conn.headers == {"Authorization": "Bearer first"}  # the first file's user "tok"
    other_order = merge_kubeconfigs([second, first])
    assert other_order["current-context"] == "other"
    (a,) = [c["context"] for c in other_order["contexts"] if c["name"] == "a"]
    assert a == {"cluster": "d", "user": "d-user"}

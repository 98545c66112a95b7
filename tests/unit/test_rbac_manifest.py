"""The manifests `rbac apply` and the stack's RBAC resource read: the shipped files are accepted as they are, anything
else is refused by name."""

from __future__ import annotations

import pytest

from drain_orchestrator.cli.rbac import (
    MANIFESTS,
    ManifestError,
    load_manifest,
    object_path,
    shipped_manifest,
    shipped_manifests,
)
from testbed.control_plane import RBAC_FILE, SURGE_RBAC_FILE


def test_the_shipped_manifest_maps_to_cluster_scoped_rbac_paths() -> None:
    docs = load_manifest(RBAC_FILE.read_text(), "rbac.yaml")
    assert [object_path(d) for d in docs] == [
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/drain-orchestrator",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/drain-orchestrator",
    ]


def test_the_shipped_list_is_the_rbac_then_the_flow_schema() -> None:
    paths = shipped_manifests()
    assert [p.name for p in paths] == list(MANIFESTS) and paths[0] == RBAC_FILE
    docs = [d for p in paths for d in load_manifest(p.read_text(), p.name)]
    assert [object_path(d) for d in docs][2:] == [
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/drain-orchestrator",
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/drain-orchestrator",
    ]


def _granted(path: object) -> set[tuple[str, str, str]]:
    docs = load_manifest(SURGE_RBAC_FILE.read_text() if path == "surge" else RBAC_FILE.read_text(), str(path))
    (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
    return {
        (g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }


def test_the_base_role_grants_no_write_to_workloads_surge_s_rights_are_apart() -> None:
    """Where SURGE_BLOCKED_PODS=never only rbac.yaml is applied: no patch of a Deployment or an HPA, no HPA list."""
    base = _granted("base")
    workloads = {p for p in base if p[0] in ("apps", "autoscaling") and p[2] != "get"}
    assert workloads == {("apps", "deployments", "list")}  # the controllers' metadata-only LIST, no write
    assert _granted("surge") == {
        ("apps", "deployments", "patch"),
        ("autoscaling", "horizontalpodautoscalers", "list"),
        ("autoscaling", "horizontalpodautoscalers", "patch"),
    }
    assert not base & _granted("surge")
    docs = load_manifest(SURGE_RBAC_FILE.read_text(), "rbac-surge.yaml")
    assert [object_path(d) for d in docs] == [
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/drain-orchestrator-surge",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/drain-orchestrator-surge",
    ]


def test_rbac_apply_finds_both_shipped_manifests() -> None:
    assert shipped_manifest() == RBAC_FILE
    assert shipped_manifest("rbac-surge.yaml") == SURGE_RBAC_FILE


def test_a_namespaced_role_lives_in_its_namespace() -> None:
    (doc,) = load_manifest(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: ops}\nrules: []\n", "m"
    )
    assert object_path(doc) == "/apis/rbac.authorization.k8s.io/v1/namespaces/ops/roles/r"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "m: no documents"),
        ("a: [", "m: not YAML"),
        ("- 1\n", "m: document 1: expected a mapping, got list"),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n",
            "m: document 1: apiVersion/kind apps/v1/Deployment: expected one of rbac.authorization.k8s.io/v1 Cluster",
        ),
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: x}\n",
            "m: document 1: apiVersion/kind rbac.authorization.k8s.io/v1/FlowSchema: expected one of",
        ),
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {}\n",
            "m: document 1: metadata.name: expected a non-empty string",
        ),
        (
            "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: a}\n---\n"
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b}\n",
            "m: document 2: metadata.namespace: required for a RoleBinding",
        ),
    ],
)
def test_bad_manifests_are_refused_naming_the_document_and_field(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as err:
        load_manifest(text, "m")
    assert str(err.value).startswith(message)

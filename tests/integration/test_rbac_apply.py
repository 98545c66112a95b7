"""`drain-orchestrator rbac apply` on the bed's real apiserver: the shipped infra/k8s/rbac.yaml (the very file the bed
runs every test under) and flowschema.yaml, applied with the caller's credentials through a kubeconfig or through EKS;
idempotent, a hand-edited ClusterRole gets the shipped rules back, --dry-run changes nothing, a caller without rights
is told so."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client

from drain_orchestrator.cli.rbac import apply_manifest, load_manifest
from drain_orchestrator.kube.rest import Kube
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.control_plane import RBAC_FILE
from testbed.kube import KubeScenario
from tests.integration.cli_support import run_cli

pytestmark = pytest.mark.integration
SHIPPED = [d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if d]
ROLE = next(d for d in SHIPPED if d["kind"] == "ClusterRole")


def _rules(api: Any, name: str) -> list[dict[str, Any]]:
    role = k8s_client.RbacAuthorizationV1Api(api).read_cluster_role(name)
    return [api.sanitize_for_serialization(r) for r in role.rules]


@pytest.fixture
def admin(testbed: Testbed) -> Iterator[Any]:
    """The bed's admin client; whatever a test did to the shipped RBAC, it is the shipped RBAC again afterwards."""
    api = testbed.admin_api_client()
    try:
        yield api
    finally:
        apply_manifest(Kube(api_client=api), load_manifest(RBAC_FILE.read_text(), str(RBAC_FILE)))
        assert _rules(api, ROLE["metadata"]["name"]) == ROLE["rules"]
        # the flow schema is not part of the bed's setup (tests/integration/test_flowschema.py creates it)
        flowcontrol = k8s_client.FlowcontrolApiserverV1Api(api)
        for delete in (flowcontrol.delete_flow_schema, flowcontrol.delete_priority_level_configuration):
            try:
                delete("drain-orchestrator")
            except k8s_client.ApiException as exc:
                if exc.status != 404:
                    raise
        api.close()


def test_rbac_apply_restores_a_hand_edited_role_and_is_idempotent(testbed: Testbed, admin: Any) -> None:
    kubeconfig = ("--kubeconfig", str(testbed.kubeconfig))
    first = run_cli("rbac", "apply", *kubeconfig)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "clusterrole/drain-orchestrator unchanged",
        "clusterrolebinding/drain-orchestrator unchanged",
        "prioritylevelconfiguration/drain-orchestrator created",
        "flowschema/drain-orchestrator created",
    ]

    # someone edits the role by hand: the events rule is gone, an extra verb appears
    rbac = k8s_client.RbacAuthorizationV1Api(admin)
    live = rbac.read_cluster_role("drain-orchestrator")
    live.rules = [r for r in live.rules if r.resources != ["events"]]
    live.rules[0].verbs = [*live.rules[0].verbs, "delete"]
    rbac.replace_cluster_role("drain-orchestrator", live)
    edited = _rules(admin, "drain-orchestrator")
    assert edited != ROLE["rules"]

    dry = run_cli("rbac", "apply", *kubeconfig, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[0] == "clusterrole/drain-orchestrator configured (server dry run)"
    assert _rules(admin, "drain-orchestrator") == edited  # nothing changed

    fixed = run_cli("rbac", "apply", *kubeconfig)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.splitlines() == [
        "clusterrole/drain-orchestrator configured",
        "clusterrolebinding/drain-orchestrator unchanged",
        "prioritylevelconfiguration/drain-orchestrator unchanged",
        "flowschema/drain-orchestrator unchanged",
    ]
    assert _rules(admin, "drain-orchestrator") == ROLE["rules"]
    again = run_cli("rbac", "apply", *kubeconfig)
    assert again.stdout.splitlines()[0] == "clusterrole/drain-orchestrator unchanged"


def test_rbac_apply_through_eks_with_the_callers_role(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, admin: Any, tmp_path: Any
) -> None:
    aws.eks_cluster("blue")
    # a copy under other names, so the bed's own RBAC is not deleted under the other tests
    name = f"drain-orchestrator-{k8s.ns}"
    copy = [yaml.safe_load(yaml.safe_dump(d)) for d in SHIPPED]
    for doc in copy:
        doc["metadata"]["name"] = name
    next(d for d in copy if d["kind"] == "ClusterRoleBinding")["roleRef"]["name"] = name
    manifest = tmp_path / "rbac.yaml"
    manifest.write_text(yaml.safe_dump_all(copy))
    rbac = k8s_client.RbacAuthorizationV1Api(admin)

    # the Lambda's own role (group drain-orchestrator) may not write RBAC: refused, named, no traceback
    lambda_env, _queue = aws.lambda_env("blue")
    refused = run_cli("rbac", "apply", "--cluster", "blue", "--file", str(manifest), env=lambda_env)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"error: cluster blue: kubernetes: get clusterrole/{name}: 403")
    assert "needs cluster-admin rights" in refused.stderr
    assert "Traceback" not in refused.stderr and "k8s-aws-v1." not in refused.stderr

    # a platform engineer's role with a cluster-admin access entry
    testbed.put_access_entry("blue", aws.role_arn("platform-admin"), "platform-admin", ["system:masters"])
    creds = aws.lambda_session("platform-admin").get_credentials().get_frozen_credentials()
    env = {
        **lambda_env,
        "AWS_ACCESS_KEY_ID": creds.access_key,
        "AWS_SECRET_ACCESS_KEY": creds.secret_key,
        "AWS_SESSION_TOKEN": creds.token or "",
    }
    try:
        made = run_cli("rbac", "apply", "--cluster", "blue", "--file", str(manifest), env=env)
        assert made.returncode == 0, made.stderr
        assert made.stdout.splitlines() == [f"clusterrole/{name} created", f"clusterrolebinding/{name} created"]
        assert _rules(admin, name) == ROLE["rules"]
        binding = rbac.read_cluster_role_binding(name)
        assert [(s.kind, s.name) for s in binding.subjects] == [("Group", "drain-orchestrator")]
        managers = {m.manager for m in rbac.read_cluster_role(name).metadata.managed_fields}
        assert "drain-orchestrator" in managers  # server-side apply under our field manager
    finally:
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            try:
                delete(name)
            except k8s_client.ApiException as exc:
                if exc.status != 404:
                    raise

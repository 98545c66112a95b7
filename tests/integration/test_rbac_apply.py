"""`drain-orchestrator rbac apply` on the bed's real apiserver: the shipped infra/k8s/rbac.yaml and rbac-surge.yaml
(the very files the bed runs every test under) and flowschema.yaml, applied with the caller's credentials through a
kubeconfig or through EKS; idempotent, a hand-edited ClusterRole gets the shipped rules back, --dry-run changes
nothing, a caller without rights is told so; surge before evict's rights are applied only where surge is on
(--surge, or the deployed function's SURGE_BLOCKED_PODS with --function) and deleted where it is off."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client

from drain_orchestrator.cli.rbac import apply_manifest, load_manifest
from drain_orchestrator.kube.rest import Kube
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.control_plane import RBAC_FILE, SURGE_RBAC_FILE
from testbed.kube import KubeScenario
from tests.integration.cli_support import run_cli

pytestmark = pytest.mark.integration
SHIPPED = [d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if d]
ROLE = next(d for d in SHIPPED if d["kind"] == "ClusterRole")
SURGE_ROLE = next(d for d in yaml.safe_load_all(SURGE_RBAC_FILE.read_text()) if d and d["kind"] == "ClusterRole")
DEFAULT = (
    "surge before evict: on (the default SURGE_BLOCKED_PODS=annotated; --surge off or --function NAME to follow a "
    "deployment)"
)
SURGE_UNCHANGED = [
    "clusterrole/drain-orchestrator-surge unchanged",
    "clusterrolebinding/drain-orchestrator-surge unchanged",
]


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
        for path in (RBAC_FILE, SURGE_RBAC_FILE):
            apply_manifest(Kube(api_client=api), load_manifest(path.read_text(), str(path)))
        assert _rules(api, ROLE["metadata"]["name"]) == ROLE["rules"]
        assert _rules(api, SURGE_ROLE["metadata"]["name"]) == SURGE_ROLE["rules"]
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
        DEFAULT,
        "clusterrole/drain-orchestrator unchanged",
        "clusterrolebinding/drain-orchestrator unchanged",
        "prioritylevelconfiguration/drain-orchestrator created",
        "flowschema/drain-orchestrator created",
        *SURGE_UNCHANGED,
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
    assert dry.stdout.splitlines()[1] == "clusterrole/drain-orchestrator configured (server dry run)"
    assert _rules(admin, "drain-orchestrator") == edited  # nothing changed

    fixed = run_cli("rbac", "apply", *kubeconfig)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.splitlines() == [
        DEFAULT,
        "clusterrole/drain-orchestrator configured",
        "clusterrolebinding/drain-orchestrator unchanged",
        "prioritylevelconfiguration/drain-orchestrator unchanged",
        "flowschema/drain-orchestrator unchanged",
        *SURGE_UNCHANGED,
    ]
    assert _rules(admin, "drain-orchestrator") == ROLE["rules"]
    again = run_cli("rbac", "apply", *kubeconfig)
    assert again.stdout.splitlines()[1] == "clusterrole/drain-orchestrator unchanged"


def _surge_rights_present(api: Any) -> bool:
    rbac = k8s_client.RbacAuthorizationV1Api(api)
    try:
        rbac.read_cluster_role_binding("drain-orchestrator-surge")
    except k8s_client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def test_rbac_apply_follows_the_deployed_function_s_surge_setting(
    testbed: Testbed, aws: AwsSeed, admin: Any, tmp_path: Any
) -> None:
    """SURGE_BLOCKED_PODS=never on the function: surge's role and binding are deleted (a dry run first changes
    nothing); annotated: applied again. An explicit --surge off does the same; an unreadable function applies
    nothing."""
    import io
    import zipfile

    kubeconfig = ("--kubeconfig", str(testbed.kubeconfig))
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w") as z:
        z.writestr("placeholder.txt", "no code runs")
    lam = aws.client("lambda")
    name = f"drainer-{tmp_path.name[-12:].replace('_', '-')}"
    trust = {
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    }
    role = aws.client("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]

    def deploy(mode: str) -> None:
        env = {"Variables": {"CLUSTER_NAMES": "blue", "SURGE_BLOCKED_PODS": mode}}
        try:
            lam.update_function_configuration(FunctionName=name, Environment=env)
        except lam.exceptions.ResourceNotFoundException:
            lam.create_function(
                FunctionName=name, Runtime="python3.13", Role=role, Handler="x.handler",
                Code={"ZipFile": package.getvalue()}, Environment=env,
            )  # fmt: skip

    deploy("never")
    dry = run_cli("rbac", "apply", *kubeconfig, "--function", name, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[0] == f"surge before evict: off (SURGE_BLOCKED_PODS=never on {name})"
    assert dry.stdout.splitlines()[-2:] == [
        "clusterrolebinding/drain-orchestrator-surge deleted (server dry run)",
        "clusterrole/drain-orchestrator-surge deleted (server dry run)",
    ]
    assert _surge_rights_present(admin)

    off = run_cli("rbac", "apply", *kubeconfig, "--function", name)
    assert off.returncode == 0, off.stderr
    assert off.stdout.splitlines()[-2:] == [
        "clusterrolebinding/drain-orchestrator-surge deleted",
        "clusterrole/drain-orchestrator-surge deleted",
    ]
    assert not _surge_rights_present(admin)
    again = run_cli("rbac", "apply", *kubeconfig, "--surge", "off")
    assert again.stdout.splitlines()[-2:] == [
        "clusterrolebinding/drain-orchestrator-surge absent",
        "clusterrole/drain-orchestrator-surge absent",
    ]

    deploy("annotated")
    on = run_cli("rbac", "apply", *kubeconfig, "--function", name)
    assert on.returncode == 0, on.stderr
    assert on.stdout.splitlines()[0] == f"surge before evict: on (SURGE_BLOCKED_PODS=annotated on {name})"
    assert on.stdout.splitlines()[-2:] == [
        "clusterrole/drain-orchestrator-surge created",
        "clusterrolebinding/drain-orchestrator-surge created",
    ]
    assert _rules(admin, "drain-orchestrator-surge") == SURGE_ROLE["rules"]

    missing = run_cli("rbac", "apply", *kubeconfig, "--function", "no-such-function")
    assert missing.returncode == 2 and missing.stderr.startswith("error: --function no-such-function: "), missing
    assert missing.stdout == ""
    both = run_cli("rbac", "apply", *kubeconfig, "--file", str(RBAC_FILE), "--surge", "on")
    assert both.returncode == 2 and "--file applies exactly that manifest" in both.stderr


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

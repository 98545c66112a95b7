"""The stack's RBAC resource (drain_orchestrator/rbac_resource.py) on the bed's apiserver, reached through the EKS token
path with an applier role mapped to cluster-admin as its access entry maps it: CloudFormation's create, an update to
changed manifests and a delete, each outcome read back from the apiserver; an object someone else applied too is left
to them; a create without access fails, names the cause and leaves nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s_client

from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.rbac_resource_support import event, invoke, response_url, shipped, task_root

pytestmark = pytest.mark.integration
APPLIER = "rbac-applier"


@pytest.fixture
def admin(testbed: Testbed) -> Iterator[Any]:
    api = testbed.admin_api_client()
    with api:
        yield api


@pytest.fixture
def applier(testbed: Testbed, aws: AwsSeed) -> str:
    """The applier's role with the access AmazonEKSClusterAdminPolicy gives (system:masters on the bed)."""
    aws.eks_cluster("blue")
    testbed.put_access_entry("blue", aws.role_arn(APPLIER), APPLIER, ["system:masters"])
    return APPLIER


def _read(admin: Any, kind: str, name: str) -> Any | None:
    rbac, flow = k8s_client.RbacAuthorizationV1Api(admin), k8s_client.FlowcontrolApiserverV1Api(admin)
    read = {
        "ClusterRole": rbac.read_cluster_role,
        "ClusterRoleBinding": rbac.read_cluster_role_binding,
        "PriorityLevelConfiguration": flow.read_priority_level_configuration,
        "FlowSchema": flow.read_flow_schema,
    }[kind]
    try:
        return read(name)
    except k8s_client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _managers(obj: Any) -> set[str]:
    return {m.manager for m in obj.metadata.managed_fields or []}


def _objects(manifests: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str]]:
    return [(d["kind"], d["metadata"]["name"]) for docs in manifests.values() for d in docs]


def test_create_update_and_delete_apply_upgrade_and_remove_the_manifests(
    applier: str, aws: AwsSeed, admin: Any, k8s: KubeScenario, tmp_path: Path
) -> None:
    suffix = f"-{k8s.ns}"
    first = shipped(suffix)
    with response_url() as (url, answers):
        done = invoke(task_root(tmp_path, first), event("Create", url), aws, applier)
        assert done.returncode == 0, done.stderr
        (created,) = answers.bodies
        assert created["Status"] == "SUCCESS", created
        assert created["PhysicalResourceId"] == "drain-orchestrator-rbac/blue"
        assert created["Reason"].startswith("applied: clusterrole/drain-orchestrator" + suffix + " created")
        for kind, name in _objects(first):
            live = _read(admin, kind, name)
            assert live is not None, (kind, name)
            assert any(m.startswith("drain-orchestrator-stack-") for m in _managers(live)), _managers(live)
        role = next(d for d in first["rbac.yaml"] if d["kind"] == "ClusterRole")
        live_role = _read(admin, "ClusterRole", role["metadata"]["name"])
        assert [admin.sanitize_for_serialization(r) for r in live_role.rules] == role["rules"]

        # the next release: the ClusterRole loses its events rule, the FlowSchema is no longer shipped
        second = shipped(suffix)
        role2 = next(d for d in second["rbac.yaml"] if d["kind"] == "ClusterRole")
        role2["rules"] = [r for r in role2["rules"] if r["resources"] != ["events"]]
        second["flowschema.yaml"] = [d for d in second["flowschema.yaml"] if d["kind"] != "FlowSchema"]
        done = invoke(task_root(tmp_path, second), event("Update", url), aws, applier)
        assert done.returncode == 0, done.stderr
        updated = answers.bodies[1]
        assert updated["Status"] == "SUCCESS", updated
        assert f"clusterrole/drain-orchestrator{suffix} configured" in updated["Reason"]
        assert f"removed: flowschema/drain-orchestrator{suffix} deleted" in updated["Reason"]
        live_role = _read(admin, "ClusterRole", role["metadata"]["name"])
        assert [admin.sanitize_for_serialization(r) for r in live_role.rules] == role2["rules"]
        assert _read(admin, "FlowSchema", f"drain-orchestrator{suffix}") is None
        assert _read(admin, "PriorityLevelConfiguration", f"drain-orchestrator{suffix}") is not None

        done = invoke(task_root(tmp_path, second), event("Delete", url), aws, applier)
        assert done.returncode == 0, done.stderr
        deleted = answers.bodies[2]
        assert deleted["Status"] == "SUCCESS", deleted
        assert deleted["PhysicalResourceId"] == "drain-orchestrator-rbac/blue"
        assert [_read(admin, kind, name) for kind, name in _objects(first)] == [None] * len(_objects(first))


def test_surge_s_rights_follow_the_surge_property(
    applier: str, aws: AwsSeed, admin: Any, k8s: KubeScenario, tmp_path: Path
) -> None:
    """A stack whose function never surges (SURGE_BLOCKED_PODS=never: Surge=false) applies no patch on Deployments;
    turning surge on applies rbac-surge.yaml, turning it off again removes it."""
    suffix = f"-{k8s.ns}"
    manifests = shipped(suffix)
    surge_role = f"drain-orchestrator-surge{suffix}"
    task = task_root(tmp_path, manifests)

    def request(kind: str, url: str, surge: str) -> dict[str, Any]:
        body = event(kind, url)
        body["ResourceProperties"] = {**body["ResourceProperties"], "Surge": surge}
        return body

    with response_url() as (url, answers):
        assert invoke(task, request("Create", url, "false"), aws, applier).returncode == 0
        assert answers.bodies[0]["Status"] == "SUCCESS", answers.bodies[0]
        assert _read(admin, "ClusterRole", f"drain-orchestrator{suffix}") is not None
        assert _read(admin, "ClusterRole", surge_role) is None
        assert invoke(task, request("Update", url, "true"), aws, applier).returncode == 0
        assert answers.bodies[1]["Status"] == "SUCCESS", answers.bodies[1]
        assert _read(admin, "ClusterRole", surge_role) is not None
        assert _read(admin, "ClusterRoleBinding", surge_role) is not None
        assert invoke(task, request("Update", url, "false"), aws, applier).returncode == 0
        assert answers.bodies[2]["Status"] == "SUCCESS", answers.bodies[2]
        assert f"clusterrole/{surge_role} deleted" in answers.bodies[2]["Reason"]
        assert _read(admin, "ClusterRole", surge_role) is None
        assert invoke(task, request("Delete", url, "false"), aws, applier).returncode == 0
        assert answers.bodies[3]["Status"] == "SUCCESS", answers.bodies[3]
    assert [_read(admin, kind, name) for kind, name in _objects(manifests)] == [None] * len(_objects(manifests))


def test_delete_leaves_objects_someone_else_applied_and_removes_its_own(
    applier: str, aws: AwsSeed, admin: Any, tmp_path: Path
) -> None:
    """The shipped manifests under their real names: the bed applied the RBAC before (as an operator's
    `rbac apply` or kubectl would have), the flow schema is the stack's alone."""
    manifests = shipped()
    assert _read(admin, "FlowSchema", "drain-orchestrator") is None
    bed_role = _read(admin, "ClusterRole", "drain-orchestrator")
    with response_url() as (url, answers):
        task = task_root(tmp_path, manifests)
        assert invoke(task, event("Create", url), aws, applier).returncode == 0
        assert answers.bodies[0]["Status"] == "SUCCESS", answers.bodies[0]
        assert _read(admin, "FlowSchema", "drain-orchestrator") is not None
        assert invoke(task, event("Delete", url), aws, applier).returncode == 0
        reason = answers.bodies[1]["Reason"]
    assert answers.bodies[1]["Status"] == "SUCCESS", reason
    assert "clusterrole/drain-orchestrator released (also applied by" in reason
    assert "flowschema/drain-orchestrator deleted" in reason
    role = _read(admin, "ClusterRole", "drain-orchestrator")
    assert role is not None and role.rules == bed_role.rules  # the drains' RBAC is still there, unchanged
    assert not any(m.startswith("drain-orchestrator-stack-") for m in _managers(role))
    assert _read(admin, "FlowSchema", "drain-orchestrator") is None
    assert _read(admin, "PriorityLevelConfiguration", "drain-orchestrator") is None


def test_a_create_without_access_fails_naming_the_cause_and_leaves_nothing(
    testbed: Testbed, aws: AwsSeed, admin: Any, k8s: KubeScenario, tmp_path: Path
) -> None:
    aws.eks_cluster("blue")  # no access entry for this role: the apiserver does not know it
    manifests = shipped(f"-{k8s.ns}")
    with response_url() as (url, answers):
        # 25 s left: the answer's margin leaves 5 s of asking again for an access entry that never comes
        done = invoke(task_root(tmp_path, manifests), event("Create", url), aws, "no-access", remaining_ms=25_000)
    assert done.returncode == 0, done.stderr
    assert "k8s-aws-v1." not in done.stderr  # the EKS token is never logged
    (failed,) = answers.bodies
    assert failed["Status"] == "FAILED"
    assert failed["Reason"].startswith(f"cluster blue: kubernetes: get clusterrole/drain-orchestrator-{k8s.ns}: 401")
    assert [_read(admin, kind, name) for kind, name in _objects(manifests)] == [None] * len(_objects(manifests))


def test_a_request_without_a_cluster_is_answered_failed_naming_the_field(
    applier: str, aws: AwsSeed, tmp_path: Path
) -> None:
    request = event("Create", "")
    request["ResourceProperties"] = {"ManifestsSha256": "0" * 64}
    with response_url() as (url, answers):
        done = invoke(task_root(tmp_path, shipped()), {**request, "ResponseURL": url}, aws, applier)
    assert done.returncode == 0, done.stderr
    (failed,) = answers.bodies
    assert failed["Status"] == "FAILED"
    assert failed["Reason"] == ("bad request: ResourceProperties.ClusterName: expected a non-empty string, got None")

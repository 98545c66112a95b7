"""Each gate's permissions, as data on the gate (workflow/gate_defs.py), are granted: its IAM actions by the
function's role statements (infra/permissions.py), its RBAC rules by the shipped ClusterRole (infra/k8s/rbac.yaml).
Pure, no jsii."""

from __future__ import annotations

from infra.permissions import ELBV2_DESCRIBE

from drain_orchestrator.cli.rbac import load_manifest
from drain_orchestrator.workflow.gate_defs import GATES, LoadBalancerGate, VolumeGate, configured
from drain_orchestrator.workflow_settings import WorkflowSettings
from testbed.control_plane import RBAC_FILE

GRANTED_IAM = {*ELBV2_DESCRIBE, "elasticloadbalancing:DeregisterTargets"}  # the latter on TARGET_GROUP_ARNS only


def _cluster_role_rules() -> list[dict[str, object]]:
    (role,) = [d for d in load_manifest(RBAC_FILE.read_text(), "rbac.yaml") if d["kind"] == "ClusterRole"]
    rules: list[dict[str, object]] = role["rules"]
    return rules


def test_every_gate_iam_action_is_granted_to_the_function() -> None:
    for gate in GATES:
        assert set(gate.needs.iam) <= GRANTED_IAM, gate.key


def test_every_gate_rbac_rule_is_in_the_shipped_cluster_role() -> None:
    rules = _cluster_role_rules()
    for gate in GATES:
        for need in gate.needs.rbac:
            granted = {
                verb
                for r in rules
                if need.api_group in r.get("apiGroups", []) and need.resource in r.get("resources", [])  # type: ignore[operator]
                for verb in r.get("verbs", [])  # type: ignore[attr-defined]
            }
            assert set(need.verbs) <= granted, (gate.key, need)


def test_the_gates_in_order_and_their_scopes() -> None:
    assert [type(g) for g in GATES] == [LoadBalancerGate, VolumeGate]
    ws = WorkflowSettings.from_env({"WAIT_FOR_DEREGISTRATION": "never", "WAIT_FOR_VOLUME_DETACH": "always"})
    assert [g.key for g in GATES if configured(g, ws, lifecycle=False)] == ["volumes"]
    assert [g.key for g in GATES if configured(g, ws, lifecycle=True)] == ["volumes"]
    assert [g.key for g in GATES if configured(g, WorkflowSettings.from_env({}), lifecycle=True)] == [
        "load_balancers",
        "volumes",
    ]

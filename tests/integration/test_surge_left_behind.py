"""Surges no drain will take back, on the bed's real controllers: ``drain-orchestrator uncordon`` takes back the
node's surges (and, when the apiserver refuses that, leaves the node cordoned), a drain lost before its verdict
leaves a surge that expires (its deadline plus a margin) and is then taken back by the next Lambda drain's verdict
(or, with SURGE_SWEEP_MINUTES, by the schedule's sweep instead) or by ``drain-orchestrator surge restore``, and a
surge whose node is gone is left behind at once. Each replacement here
is pinned to its cordoned node, so it stays Pending and the surge stays in place until something takes it back."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from drain_orchestrator.drain.surge import HELD_LABEL, HOLDERS, NODE_RECORD
from drain_orchestrator.engine.surge_sweep import restore_left_behind
from drain_orchestrator.timefmt import iso_utc
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.admission_support import DEPLOYMENT_WRITES, deployment_patch_denied, requests_denied
from tests.integration.audit_support import by_verb_and_resource, function_requests
from tests.integration.cli_support import run_cli
from tests.integration.drain_support import drain, drainer
from tests.integration.lambda_support import LambdaHarness
from tests.integration.surge_support import hpa, opt_in, read_hpa, surge_annotations

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def cli(testbed: Testbed, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "--kubeconfig", str(testbed.kubeconfig))


def ours(k8s: KubeScenario, lines: str) -> list[str]:
    """The lines of a cluster-wide report that name this test's namespace: tests in other files run beside it on the
    same cluster, and their surges are theirs to assert on."""
    return [line for line in lines.splitlines() if f" {k8s.ns}/" in line]


def ours_left(k8s: KubeScenario, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if e["deployment"].startswith(f"{k8s.ns}/")]


def _pinned(k8s: KubeScenario, name: str, node: str) -> None:
    """One replica that only ``node`` fits, opted in to surge, under minAvailable 1."""
    k8s.deployment(name, 1, nodes=[node], grace=1)
    k8s.wait_pods_ready(f"app={name}", 1)
    opt_in(k8s, name)
    k8s.pdb(name, {"app": name}, min_available=1)
    k8s.wait_pdb(name, disruptions_allowed=0)


def _surge_and_leave(testbed: Testbed, k8s: KubeScenario, name: str, node: str, **opts: Any) -> Any:
    """A drain that surges ``name`` for ``node`` and ends without taking it back (as a lost execution would)."""
    with drainer(testbed) as kube:
        report = drain(kube, node, timeout=12, surge="annotated", run_id="lost", **opts)
    assert not report.drained
    return k8s.wait_for(
        lambda: (d := k8s.apps.read_namespaced_deployment(name, k8s.ns)).spec.replicas == 2 and d, what="the surge"
    )


def _orphan_surged_for_an_hour(testbed: Testbed, k8s: KubeScenario) -> tuple[str, dict[str, Any]]:
    """Deployment "orphan" pinned to a new node, surged for that node's drain with an hour's deadline, the drain
    gone: the node and the Deployment's surge entry for it."""
    (lost,) = k8s.add_nodes(1)
    _pinned(k8s, "orphan", lost)
    dep = _surge_and_leave(testbed, k8s, "orphan", lost, deadline=time.time() + 3600)
    (entry,) = json.loads(dep.metadata.annotations[HOLDERS]).values()
    return lost, entry


def _expire(k8s: KubeScenario, name: str, node: str, entry: dict[str, Any]) -> str:
    """Move the node's surge entry on the Deployment to a minute ago, as the clock would; returns that time."""
    past = iso_utc(time.time() - 60)
    holders = json.dumps({node: {**entry, "expires": past}})
    k8s.apps.patch_namespaced_deployment(name, k8s.ns, {"metadata": {"annotations": {HOLDERS: holders}}})
    return past


def _assert_taken_back(k8s: KubeScenario, name: str, node: str) -> None:
    dep = k8s.apps.read_namespaced_deployment(name, k8s.ns)
    assert dep.spec.replicas == 1 and surge_annotations(dep) == {}, dep.metadata.annotations
    assert HELD_LABEL not in (dep.metadata.labels or {})
    assert NODE_RECORD not in (k8s.core.read_node(node).metadata.annotations or {})


def test_uncordon_takes_back_the_nodes_surge_idempotently(testbed: Testbed, k8s: KubeScenario) -> None:
    (node,) = k8s.add_nodes(1)
    _pinned(k8s, "pinned", node)
    dep = _surge_and_leave(testbed, k8s, "pinned", node)
    assert dep.metadata.labels[HELD_LABEL] == "true"

    proc = cli(testbed, "uncordon", node)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    restored = f"surge: Deployment {k8s.ns}/pinned: restored: replicas 2 -> 1: the node was uncordoned"
    assert proc.stdout.splitlines() == [restored, f"node/{node} uncordoned"]
    _assert_taken_back(k8s, "pinned", node)
    assert not k8s.core.read_node(node).spec.unschedulable

    again = cli(testbed, "uncordon", node)
    assert (again.returncode, again.stdout.strip()) == (0, f"node/{node} already uncordoned")
    assert k8s.apps.read_namespaced_deployment("pinned", k8s.ns).spec.replicas == 1

    # a node whose record of its surges was lost (an older uncordon removed it): the workload's entry still names it
    _surge_and_leave(testbed, k8s, "pinned", node)
    k8s.core.patch_node(node, {"metadata": {"annotations": {NODE_RECORD: None}}})
    proc = cli(testbed, "uncordon", node)
    assert proc.returncode == 0 and restored in proc.stdout.splitlines(), proc.stdout + proc.stderr
    _assert_taken_back(k8s, "pinned", node)


def test_an_expired_surge_is_taken_back_by_the_next_drains_verdict_and_surge_restore(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    lost, entry = _orphan_surged_for_an_hour(testbed, k8s)
    expires = entry["expires"]
    assert expires > iso_utc(time.time() + 3600)  # the deadline plus the margin

    # not expired, its node there: nothing is left behind yet
    proc = cli(testbed, "surge", "restore", "--dry-run")
    assert (proc.returncode, ours(k8s, proc.stdout)) == (0, []), proc.stdout + proc.stderr
    status = json.loads(cli(testbed, "status", "--cluster", "blue", "--no-aws", "--json").stdout)
    assert ours_left(k8s, status["surges_left_behind"]) == []

    # the margin has passed: moved to the past, as the clock would
    past = _expire(k8s, "orphan", lost, entry)
    proc = cli(testbed, "surge", "restore", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    left = {
        "deployment": f"{k8s.ns}/orphan",
        "node": lost,
        "count": 1,
        "via": "deployment",
        "why": f"expired at {past}",
    }
    assert out["restored"] == [] and ours_left(k8s, out["left_behind"]) == [left]
    # status says so too, beside the drains
    proc = cli(testbed, "status", "--cluster", "blue", "--no-aws", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ours_left(k8s, json.loads(proc.stdout)["surges_left_behind"]) == [{"cluster": "blue", **left}]
    table = cli(testbed, "status", "--cluster", "blue", "--no-aws").stdout.splitlines()
    at = table.index("surges left behind (no drain will take them back: drain-orchestrator surge restore):")
    (row,) = ours(k8s, "\n".join(table[at:]))
    assert row.split() == ["blue", f"{k8s.ns}/orphan", lost, "+1", "(deployment)", "expired", "at", past]
    assert k8s.apps.read_namespaced_deployment("orphan", k8s.ns).spec.replicas == 2  # a dry run changed nothing

    # another node's drain through the Lambda: its verdict takes the expired surge back
    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED)
    aws.nodes_for(k8s, [iid])  # the node the Lambda drains: empty
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue")
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    run = lam.run(event)
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "drained", inst
    assert [n for n in inst["surge_restored"] if f" {k8s.ns}/" in n] == [
        f"Deployment {k8s.ns}/orphan: replicas 2 -> 1: left behind by node {lost}'s drain (expired at {past})"
    ]
    _assert_taken_back(k8s, "orphan", lost)

    proc = cli(testbed, "surge", "restore")
    assert (proc.returncode, ours(k8s, proc.stdout)) == (0, []), proc.stdout + proc.stderr


def test_an_hpa_surge_whose_node_is_gone_is_left_behind_and_restored(testbed: Testbed, k8s: KubeScenario) -> None:
    (node,) = k8s.add_nodes(1)
    _pinned(k8s, "api", node)
    hpa(k8s, "api", min_replicas=1, max_replicas=1)
    _surge_and_leave(testbed, k8s, "api", node, deadline=time.time() + 3600)
    h = read_hpa(k8s, "api")
    assert (h.spec.min_replicas, h.metadata.labels[HELD_LABEL]) == (2, "true")

    proc = cli(testbed, "surge", "restore", "--dry-run")
    assert ours(k8s, proc.stdout) == [], proc.stdout + proc.stderr
    # an operator who knows the drain is over names the node
    proc = cli(testbed, "surge", "restore", "--dry-run", "--node", node)
    assert ours(k8s, proc.stdout) == [
        f"would restore: Deployment {k8s.ns}/api +1 (hpa) for node {node}: named on the command line"
    ], proc.stdout + proc.stderr

    k8s.core.delete_node(node)
    k8s.wait_for(lambda: node not in {n.metadata.name for n in k8s.core.list_node().items}, what="node deleted")
    proc = cli(testbed, "surge", "restore")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ours(k8s, proc.stdout) == [
        f"left behind: Deployment {k8s.ns}/api +1 (hpa) for node {node}: node gone",
        f"restored: Deployment {k8s.ns}/api: HPA minReplicas 2 -> 1: left behind by node {node}'s drain (node gone)",
    ]
    h = read_hpa(k8s, "api")
    assert (h.spec.min_replicas, h.spec.max_replicas) == (1, 1) and surge_annotations(h) == {}
    assert HELD_LABEL not in (h.metadata.labels or {})


def _freeze_replicas(k8s: KubeScenario) -> str:
    """A ValidatingAdmissionPolicy (the apiserver's own CEL admission) that denies any change of a Deployment's
    replicas in the test's namespace, in force once a probe Deployment cannot be scaled; returns its name."""
    name = f"freeze-{k8s.run_id}"
    admission = client.AdmissionregistrationV1Api(k8s.api_client)
    rules = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["deployments"]}]
    admission.create_validating_admission_policy(
        {
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": rules},
                "validations": [
                    {"expression": "object.spec.replicas == oldObject.spec.replicas", "message": "replicas frozen"}
                ],
            },
        }
    )
    selector = {"matchLabels": {"kubernetes.io/metadata.name": k8s.ns}}
    admission.create_validating_admission_policy_binding(
        {
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": selector},
            },
        }
    )
    k8s.deployment("probe", 0)

    def denied() -> bool:
        replicas = k8s.apps.read_namespaced_deployment("probe", k8s.ns).spec.replicas
        try:
            k8s.apps.patch_namespaced_deployment("probe", k8s.ns, {"spec": {"replicas": 1 - replicas}})
        except ApiException as exc:
            return "replicas frozen" in str(exc.body)
        return False

    k8s.wait_for(denied, what="the admission policy in force")
    return name


def _thaw(k8s: KubeScenario, name: str) -> None:
    admission = client.AdmissionregistrationV1Api(k8s.api_client)
    admission.delete_validating_admission_policy_binding(name)
    admission.delete_validating_admission_policy(name)


def test_uncordon_that_cannot_take_the_surge_back_leaves_the_node_cordoned(testbed: Testbed, k8s: KubeScenario) -> None:
    (node,) = k8s.add_nodes(1)
    _pinned(k8s, "stuck", node)
    _surge_and_leave(testbed, k8s, "stuck", node)
    frozen = _freeze_replicas(k8s)
    try:
        proc = cli(testbed, "uncordon", node)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"error: node {node!r} left cordoned, its surges could not be taken back" in proc.stderr
        assert "replicas frozen" in proc.stderr  # the apiserver's reason, passed on
        assert k8s.core.read_node(node).spec.unschedulable  # not uncordoned with a surge still in place
        dep = k8s.apps.read_namespaced_deployment("stuck", k8s.ns)
        assert dep.spec.replicas == 2 and dep.metadata.labels[HELD_LABEL] == "true"
        assert NODE_RECORD in (k8s.core.read_node(node).metadata.annotations or {})  # still known to be taken back
    finally:
        _thaw(k8s, frozen)

    # once the cause is gone, the same command finishes the job
    proc = k8s.wait_for(lambda: (p := cli(testbed, "uncordon", node)).returncode == 0 and p, what="uncordon to succeed")
    assert proc.stdout.splitlines()[-1] == f"node/{node} uncordoned"
    _assert_taken_back(k8s, "stuck", node)
    assert not k8s.core.read_node(node).spec.unschedulable


def test_under_a_schedule_verdicts_leave_the_look_to_the_schedules_event_which_restores_what_is_left(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    lost, entry = _orphan_surged_for_an_hour(testbed, k8s)
    past = _expire(k8s, "orphan", lost, entry)  # its margin passed: left behind

    # a drain alone, with the schedule configured: its verdict does not look (no cluster-wide LIST of HPAs)
    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED)
    aws.nodes_for(k8s, [iid])
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue,unreachable", SURGE_SWEEP_MINUTES="15")
    offset = testbed.audit_log.stat().st_size
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    run = lam.run(event)
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]
    assert inst["result"] == "drained" and not inst.get("surge_restored"), inst
    requests = by_verb_and_resource(function_requests(testbed, offset))
    assert requests["list horizontalpodautoscalers"] == 0 and requests["list deployments"] == 0, requests
    assert k8s.apps.read_namespaced_deployment("orphan", k8s.ns).spec.replicas == 2

    # the schedule's tick: each served cluster looked at; one that cannot be reached is reported, not fatal
    tick = {"source": "drain-orchestrator", "detail-type": "Surge Sweep", "id": "tick-1"}
    run = lam.run(tick)
    assert run.status == "SUCCEEDED", run.error
    swept = run.result["surge_sweep"]
    assert list(swept["restored"]) == ["blue"], swept
    assert [n for n in swept["restored"]["blue"] if f" {k8s.ns}/" in n] == [
        f"Deployment {k8s.ns}/orphan: replicas 2 -> 1: left behind by node {lost}'s drain (expired at {past})"
    ]
    assert list(swept["failed"]) == ["unreachable"], swept
    assert '"reason":"surge-sweep-failed"' in run.stdout.replace(" ", "")
    _assert_taken_back(k8s, "orphan", lost)

    again = lam.run(tick)
    assert again.status == "SUCCEEDED", again.error
    restored = again.result["surge_sweep"]["restored"]
    assert list(restored) == ["blue"] and [n for n in restored["blue"] if f" {k8s.ns}/" in n] == [], again.result


def test_a_malformed_surge_annotation_is_skipped_and_the_rest_are_restored(testbed: Testbed, k8s: KubeScenario) -> None:
    lost, entry = _orphan_surged_for_an_hour(testbed, k8s)
    _expire(k8s, "orphan", lost, entry)  # namespace A: a surge of ours left behind
    other = KubeScenario(testbed.admin_api_client(), prefix="tenant-b")
    try:
        # namespace B: surge records its users wrote on their own Deployment (a node that is gone, a name that is no
        # node's), and a policy of theirs that refuses any write of it: it cannot be restored
        other.deployment("poisoned", 1, nodes=[lost], grace=1)
        holders = json.dumps({"gone-node": {"count": 1, "run": "x"}, "../../namespaces": {"count": 1}})
        meta = {"labels": {HELD_LABEL: "true"}, "annotations": {HOLDERS: holders}}
        other.apps.patch_namespaced_deployment("poisoned", other.ns, {"metadata": meta})
        with (
            requests_denied(other, "frozen", DEPLOYMENT_WRITES, lambda: deployment_patch_denied(other, "poisoned")),
            drainer(testbed) as kube,
        ):
            notes = restore_left_behind(kube, time.time())  # what the sweep's schedule and a drain's verdict run
        mine = (f"Deployment {k8s.ns}/", f"Deployment {other.ns}/")
        by = {n.workload: n for n in notes if n.workload.startswith(mine)}
        assert set(by) == {f"Deployment {k8s.ns}/orphan", f"Deployment {other.ns}/poisoned"}
        assert by[f"Deployment {k8s.ns}/orphan"].status == "restored"
        bad = by[f"Deployment {other.ns}/poisoned"]
        assert bad.status == "failed" and bad.detail.startswith("not restored, left behind by node gone-node's drain")
        assert "is forbidden: ValidatingAdmissionPolicy 'deny-deployments-" in bad.detail, bad.detail
        _assert_taken_back(k8s, "orphan", lost)
        assert other.apps.read_namespaced_deployment("poisoned", other.ns).spec.replicas == 1
    finally:
        other.cleanup()
        other.api_client.close()

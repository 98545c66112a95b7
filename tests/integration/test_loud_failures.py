"""What the failure alarms hear, through the real handler on the bed: the metrics they watch are emitted when and as
the alarms expect (infra/failure_alarms.py; the alarms themselves are CloudWatch's and are checked in the synthesized
template by tests/infra/test_stack_alarms.py).

- a cluster whose RBAC was never applied: every step on it fails (403), each failed attempt counts `StepFailures` with
  no dimension but the service (the series the StepsFailing alarm watches), and the log says `forbidden`;
- the liveness schedule's input: the settings step and one liveness step, `LivenessChecks` counted once, no parse,
  no decide.
"""

from __future__ import annotations

import json

import pytest

from drain_orchestrator.workflow.schedules import LIVENESS_DETAIL_TYPE
from drain_orchestrator.workflow.schedules import SOURCE as LIVENESS_SOURCE
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness
from tests.integration.rbac_support import without_any_rights

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}
SERVICE_ONLY = {"service": "drain-orchestrator"}


def test_steps_failing_on_a_cluster_without_rbac_count_the_series_the_steps_failing_alarm_watches(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    k8s.deployment("web", 1, nodes=[node], grace=1)
    k8s.wait_pods_ready("app=web", 1)
    lam.configure("blue", DEADLINE_STATE_CHANGE_SECONDS="20")
    aws.stop_instance(iid)  # what the event says, so the drain goes ahead
    with without_any_rights(testbed):  # a new cluster, `rbac apply` forgotten
        run = lam.run(samples.ec2_event("state-change-stopping.json", instance_id=iid))
    assert run.status == "FAILED"  # after its verdict, so the event reaches the dead-letter queue
    (final,) = [n for n in lam.notifications() if n["phase"] in ("completed", "failed", "stopped")]
    assert final["result"] == "failed" and final["error"]["kind"] == "forbidden", final
    failures = [m for m in run.emf() if m["name"] == "StepFailures"]
    assert len(failures) >= 2, failures  # retried: one count per failed attempt
    assert all(m["dims"] == SERVICE_ONLY and m["namespace"] == "DrainOrchestrator" for m in failures), failures
    reasons = sum(run.metric_total("Errors", reason=f"{step}-failed") for step in ("locate", "cordon"))
    assert reasons == len(failures)  # the same attempts, by step
    logged = [json.loads(x) for x in run.stdout.splitlines() if x.startswith("{") and "step failed" in x]
    assert logged and {x["error_kind"] for x in logged} == {"forbidden"}
    assert not k8s.core.read_node(node).spec.unschedulable  # nothing was done on the cluster


def test_the_liveness_check_validates_the_settings_takes_one_step_and_counts_itself(lam: LambdaHarness) -> None:
    lam.configure("blue")
    event = {"source": LIVENESS_SOURCE, "detail-type": LIVENESS_DETAIL_TYPE, "id": "check-1", "time": "t"}
    run = lam.run(event, now=False)
    assert run.status == "SUCCEEDED", run.error
    assert run.result is not None and run.result["event_id"] == "check-1" and "liveness" in run.result
    checks = [m for m in run.emf() if m["name"] == "LivenessChecks"]
    assert [m["dims"] for m in checks] == [SERVICE_ONLY] and run.metric_total("LivenessChecks") == 1
    names = [str(getattr(op, "name", "") or "") for op in run.operations]
    assert "settings" in names and "liveness" in names and not {"admit", "parse", "decide"} & set(names)


def test_a_liveness_check_under_invalid_settings_fails_and_counts_nothing(lam: LambdaHarness) -> None:
    lam.configure("blue", DRAIN_PASS_SECONDS="not-a-number")
    event = {"source": LIVENESS_SOURCE, "detail-type": LIVENESS_DETAIL_TYPE, "id": "check-2", "time": "t"}
    run = lam.run(event, now=False)
    assert run.status == "FAILED"
    assert run.metric_total("LivenessChecks") == 0  # silence: the Liveness alarm fires


def test_a_pod_forced_at_the_deadline_is_reported_with_what_held_it(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """A pod under two PodDisruptionBudgets (the eviction API never evicts it) deleted by the deadline's policy: the
    final notification says which budgets held it and the apiserver's refusal, not just that it was forced."""
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    k8s.deployment("web", 1, nodes=[node], grace=1)
    (pod,) = k8s.wait_pods_ready("app=web", 1)
    k8s.pdb("web-a", {"app": "web"}, max_unavailable=1)
    k8s.pdb("web-b", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web-a", disruptions_allowed=1)
    k8s.wait_pdb("web-b", disruptions_allowed=1)
    lam.configure("blue", DEADLINE_STATE_CHANGE_SECONDS="20", FORCE_DELETE_ON_DEADLINE="true")
    aws.stop_instance(iid)
    run = lam.run(samples.ec2_event("state-change-stopping.json", instance_id=iid))
    (inst,) = run.result["instances"]
    key = f"{k8s.ns}/{pod.metadata.name}"
    assert inst["result"] == "drained" and inst["report"]["forced"] == [key], inst
    (final,) = [n for n in lam.notifications() if n["phase"] in ("completed", "failed", "stopped")]
    (why,) = final["report"]["forced_reasons"]
    assert why["pod"] == key and why["grace_seconds"] >= 1
    assert why["reason"].startswith("web-a, web-b still refused eviction "), why
    assert "before the deadline: " in why["reason"] and "more than one PodDisruptionBudget" in why["reason"], why

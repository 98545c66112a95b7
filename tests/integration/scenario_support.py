"""Helpers for Lambda scenarios on the bed: an owned ASG instance with its kwok node and a spare, a workload on the
node, a fault played in the background while the handler runs, and the checks of a run's verdict."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from testbed import samples
from testbed.aws_seed import TERMINATING, AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import ROLE, LambdaHarness

OWNED = {"kubernetes.io/cluster/blue": "owned"}
ASG, HOOK = "ng-blue", "drain"


def pods_on(k8s: KubeScenario, node: str) -> list[Any]:
    return [p for p in k8s.pods(node=node) if p.metadata.deletion_timestamp is None]


def blue_asg_node(aws: AwsSeed, k8s: KubeScenario, *, heartbeat_timeout: int = 300) -> tuple[str, str, str]:
    """Cluster "blue", an ASG of one owned instance with a terminate hook, its node and a spare node."""
    aws.eks_cluster("blue")
    (iid,) = aws.asg(
        ASG,
        size=1,
        tags=OWNED,
        hooks=[{"name": HOOK, "transition": TERMINATING, "heartbeat_timeout": heartbeat_timeout}],
    )
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    return iid, node, spare


def blue_instance_node(aws: AwsSeed, k8s: KubeScenario) -> tuple[str, str, str]:
    """Cluster "blue", one owned instance outside any group, its node and a spare node."""
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    return iid, node, spare


def spread(k8s: KubeScenario, node: str, spare: str, name: str = "web", replicas: int = 4) -> set[str]:
    """Pods of a Deployment on ``node`` (spare cordoned while they start), with a PDB allowing one disruption."""
    k8s.deployment_on(name, replicas, [node], spare, grace=1)
    k8s.pdb(name, {"app": name}, max_unavailable=1)
    k8s.wait_pdb(name, disruptions_allowed=1)
    return {p.metadata.name for p in pods_on(k8s, node)}


def hold_with_pdb(k8s: KubeScenario, node: str, spare: str, name: str = "web") -> None:
    """Two pods on ``node`` behind a PDB that allows no disruption: the drain cannot finish until it changes."""
    spread(k8s, node, spare, name, replicas=2)
    set_pdb(k8s, name, max_unavailable=0)


def set_pdb(k8s: KubeScenario, name: str, *, max_unavailable: int) -> None:
    k8s.policy.patch_namespaced_pod_disruption_budget(name, k8s.ns, {"spec": {"maxUnavailable": max_unavailable}})
    if max_unavailable == 0:
        k8s.wait_pdb(name, disruptions_allowed=0)


def terminate_event(aws: AwsSeed, iid: str) -> dict[str, Any]:
    """Start the instance's lifecycle action and return the ASG terminate event that announces it."""
    token = aws.start_lifecycle_action(ASG, HOOK, iid)
    return samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg=ASG, hook=HOOK, token=token)


# ---- faults in the background ------------------------------------------------------------------------------------
class Background(threading.Thread):
    """Runs a fault's choreography while the handler runs in the test's thread; :meth:`outcome` re-raises its
    failure in the test."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__(daemon=True, name="fault-choreography")
        self.fn = fn
        self.value: Any = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.value = self.fn()
        except BaseException as exc:  # handed to the test thread
            self.error = exc

    def outcome(self, timeout: float = 60) -> Any:
        self.join(timeout)
        assert not self.is_alive(), "the fault's choreography did not finish"
        if self.error is not None:
            raise self.error
        return self.value


def relax_pdb_after(k8s: KubeScenario, name: str, seconds: float) -> Background:
    """The PDB's owner relaxes it (maxUnavailable 1) after ``seconds``: a drain held by it can then finish."""

    def relax() -> None:
        time.sleep(seconds)  # the hold itself: a drain must outlast it
        k8s.policy.patch_namespaced_pod_disruption_budget(name, k8s.ns, {"spec": {"maxUnavailable": 1}})

    return Background(relax)


def wait_cordoned(k8s: KubeScenario, node: str, timeout: float = 120) -> None:
    k8s.wait_for(lambda: k8s.core.read_node(node).spec.unschedulable, timeout=timeout, what=f"{node} cordoned")


def wait_drain_started(k8s: KubeScenario, node: str, timeout: float = 120) -> None:
    """The drain outlived its first pass (its DrainStarted Event is written once the first pass did not drain)."""
    k8s.wait_for(lambda: "DrainStarted" in node_events(k8s, node), timeout=timeout, what=f"{node} DrainStarted")


def wait_evicting(k8s: KubeScenario, node: str, timeout: float = 120) -> None:
    """Some pod on the node is terminating: the drain is under way."""
    k8s.wait_for(
        lambda: any(p.metadata.deletion_timestamp for p in k8s.pods(node=node)),
        timeout=timeout,
        what=f"a pod terminating on {node}",
    )


def node_events(k8s: KubeScenario, node: str) -> set[str]:
    events = k8s.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node},source=drain-orchestrator"
    ).items
    return {e.reason for e in events}


# ---- the verdict -------------------------------------------------------------------------------------------------
def action_of(aws: AwsSeed, iid: str) -> dict[str, Any]:
    (action,) = [a for a in aws.lifecycle_actions() if a["instance_id"] == iid]
    return action


def assert_completed_by_function(aws: AwsSeed, iid: str, result: str) -> dict[str, Any]:
    """The action was completed with ``result`` by the function's role -- not timed out, not by anyone else."""
    action = action_of(aws, iid)
    assert action["state"] == "COMPLETED", action
    assert (action["result"], action["completed_by"]) == (result, aws.role_arn(ROLE)), action
    return action


def final_notification(lam: LambdaHarness, phase: str, result: str) -> list[dict[str, Any]]:
    """Exactly one final notification (completed / failed) was published, with this phase and result; returns
    every notification read (reading consumes them)."""
    notes = lam.notifications()
    finals = [n for n in notes if n.get("phase") in ("completed", "failed")]
    assert len(finals) == 1, notes
    (final,) = finals
    assert (final["phase"], final.get("result")) == (phase, result), final
    return notes


def instance_summary(run: Any) -> dict[str, Any]:
    assert run.result is not None, (run.status, run.error)
    (inst,) = run.result["instances"]
    return dict(inst)


def measure(lam: LambdaHarness, scenario: str, **values: float) -> None:
    """One MEASURE line on the terminal (``pytest -s``), even while the harness captures the handler's output."""
    line = " ".join(f"{k}={v:.1f}" for k, v in values.items())
    with lam.capfd.disabled():
        print(f"MEASURE scenario={scenario} {line}", flush=True)

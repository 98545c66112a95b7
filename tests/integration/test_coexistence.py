"""Other tools on the same ASGs and nodes: another lifecycle hook on our instance, and a node Karpenter manages.
The real Lambda handler (durable local runner) against moto server with the lifecycle-action extension and the
real control plane; `explain` through the same decision code the CLI prints."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from drain_orchestrator.cli.explain import explain
from drain_orchestrator.events import parse_event
from drain_orchestrator.settings import Settings
from testbed import samples
from testbed.aws_seed import TERMINATING, AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness, Run

pytestmark = pytest.mark.integration

OWNED = {"kubernetes.io/cluster/blue": "owned"}
OURS, THEIRS = "drain", "nth-drain"  # ours is in the bed's LIFECYCLE_HOOK_NAMES, theirs stands for another tool's
TWO_HOOKS = [
    {"name": OURS, "transition": TERMINATING, "heartbeat_timeout": 300},
    {"name": THEIRS, "transition": TERMINATING, "heartbeat_timeout": 300},
]
# Karpenter v1 tags its instances with the cluster tags and its node pool
KARPENTER = {**OWNED, "eks:eks-cluster-name": "blue", "karpenter.sh/nodepool": "default"}


def _action(aws: AwsSeed, instance_id: str, hook: str) -> dict[str, Any]:
    [action] = [a for a in aws.lifecycle_actions() if a["instance_id"] == instance_id and a["hook"] == hook]
    return action


def _explained(raw: dict[str, Any]) -> dict[str, Any]:
    """What `drain-orchestrator explain` prints for ``raw`` with the environment the harness configured."""
    event = parse_event(raw)
    report = explain(event, Settings.from_env(os.environ), nodes=False)  # type: ignore[arg-type]
    [decision] = report["decisions"]
    return decision  # type: ignore[no-any-return]


def _logs(run: Run) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith('{"level"')]


def _terminate(aws: AwsSeed, iid: str, hook: str) -> dict[str, Any]:
    token = aws.start_lifecycle_action("ng-blue", hook, iid)
    return samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook=hook, token=token)


def test_another_tools_hook_stays_active_and_explained_while_ours_on_the_same_instance_is_completed(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    [iid] = aws.asg("ng-blue", size=1, tags=OWNED, hooks=TWO_HOOKS)
    [node] = aws.nodes_for(k8s, [iid])
    [spare] = k8s.add_nodes(1)
    k8s.deployment("web", 2, nodes=[node, spare], grace=1)
    k8s.wait_pods_ready("app=web", 2)
    theirs, ours = _terminate(aws, iid, THEIRS), _terminate(aws, iid, OURS)  # Auto Scaling waits for both
    lam.configure("blue")

    foreign = lam.run(theirs)

    assert foreign.status == "SUCCEEDED", foreign.error
    assert foreign.result["instances"] == []
    [left] = foreign.result["not_acted_on"]
    assert (left["instance_id"], left["owned"], left["cluster"]) == (iid, True, "blue")
    assert (left["reason"], left["action"], left["lifecycle_hook"]) == ("hook-not-ours", "skip", THEIRS)
    line = next(e for e in _logs(foreign) if e.get("reason") == "hook-not-ours")
    assert (line["lifecycle_hook"], line["instance_id"]) == (THEIRS, iid)
    assert foreign.metric_total("EventsIgnored", reason="hook-not-ours") == 1
    assert foreign.metric_total("LifecycleActionsCompleted") == 0
    assert not k8s.core.read_node(node).spec.unschedulable  # the hook's owner drains, not us
    # explain decides as the function did, and says what EC2 and Auto Scaling report of the instance
    now = {"ec2_state": "running", "group": "ng-blue", "lifecycle_state": "Terminating:Wait"}
    assert _explained(theirs) == {**left, "node": None, **now}
    untouched = _action(aws, iid, THEIRS)
    assert (untouched["state"], untouched["heartbeats"], untouched["completed_by"]) == ("ACTIVE", 0, None)

    mine = lam.run(ours)

    assert mine.status == "SUCCEEDED", mine.error
    [drained] = mine.result["instances"]
    assert (drained["result"], drained["lifecycle"]["outcome"]) == ("drained", "completed")
    completed = _action(aws, iid, OURS)
    assert (completed["state"], completed["result"]) == ("COMPLETED", "CONTINUE")
    assert completed["completed_by"] == aws.role_arn("drain-orchestrator")
    still = _action(aws, iid, THEIRS)  # our drain neither heartbeated nor completed the other hook
    assert (still["state"], still["heartbeats"], still["completed_by"]) == ("ACTIVE", 0, None)


def test_action_foreign_hook_drains_the_node_but_never_touches_that_hook(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    [iid] = aws.asg("ng-blue", size=1, tags=OWNED, hooks=TWO_HOOKS)
    [node] = aws.nodes_for(k8s, [iid])
    [spare] = k8s.add_nodes(1)
    k8s.deployment("web", 2, nodes=[node, spare], grace=1)
    k8s.wait_pods_ready("app=web", 2)
    theirs = _terminate(aws, iid, THEIRS)
    lam.configure("blue", ACTION_FOREIGN_HOOK="drain")

    run = lam.run(theirs)

    assert run.status == "SUCCEEDED", run.error
    [drained] = run.result["instances"]
    assert drained["result"] == "drained" and "outcome" not in (drained.get("lifecycle") or {})
    assert k8s.core.read_node(node).spec.unschedulable is True
    assert run.metric_total("LifecycleActionsCompleted") == 0
    left = _action(aws, iid, THEIRS)
    assert (left["state"], left["heartbeats"], left["completed_by"]) == ("ACTIVE", 0, None)


def test_a_karpenter_node_is_explained_and_left_alone_unless_opted_in(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=KARPENTER)
    [node] = aws.nodes_for(k8s, [iid])
    lam.configure("blue")
    warning = samples.ec2_event("spot-interruption-terminate.json", instance_id=iid)

    run = lam.run(warning)

    assert run.status == "SUCCEEDED", run.error
    assert run.result["instances"] == []
    [left] = run.result["not_acted_on"]
    assert (left["owned"], left["cluster"], left["reason"], left["action"]) == (
        True,
        "blue",
        "managed-by-karpenter",
        "skip",
    )
    assert _explained(warning)["reason"] == "managed-by-karpenter"
    assert run.metric_total("EventsIgnored", reason="managed-by-karpenter") == 1
    untouched = k8s.core.read_node(node)
    assert not untouched.spec.unschedulable
    assert not any(k.startswith("drain-orchestrator.io/") for k in (untouched.metadata.annotations or {}))

    # the cordon stays for the assertions (no return to service: tests/integration/test_return_to_service.py)
    lam.configure("blue", DRAIN_CONTROLLER_MANAGED_NODES="karpenter", REBALANCE_RETURN_SECONDS="0")
    opted = lam.run(samples.ec2_event("rebalance-recommendation.json", instance_id=iid))

    assert opted.status == "SUCCEEDED", opted.error
    [cordoned] = opted.result["instances"]
    assert cordoned["node"] == node
    assert k8s.core.read_node(node).spec.unschedulable is True

"""A node of many pods whose evictions are all denied with long messages, through the real handler: every checkpoint
stays under the durable service's 256 KB, measured on the serialized operations themselves (the harness also refuses
a larger one, as the service does), and the drain reaches its verdict once the denial is lifted."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from drain_orchestrator.drain.report import MESSAGE_CHARS, DrainReport
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.admission_support import evictions_denied, lift_denial
from tests.integration.lambda_support import CHECKPOINT_LIMIT_BYTES, LambdaHarness
from tests.integration.scenario_support import (
    Background,
    assert_completed_by_function,
    blue_asg_node,
    instance_summary,
    node_events,
    pods_on,
    terminate_event,
)

pytestmark = pytest.mark.integration

PODS = 500
DENIAL = "evictions are paused for maintenance of this namespace; " * 37  # ~2 KB, as a policy's author may write


def every_operation(operations: list[Any]) -> list[Any]:
    """The operations and their children, at any depth, each once."""
    out: dict[str, Any] = {}
    todo = list(operations)
    while todo:
        op = todo.pop()
        out.setdefault(op.operation_id, op)
        todo += list(getattr(op, "child_operations", None) or [])
    return list(out.values())


def payloads(operations: list[Any]) -> list[tuple[str, int]]:
    """(name, bytes) of every checkpointed payload: step results and child contexts' results."""
    return [
        (str(getattr(op, "name", "") or op.operation_id), len(result.encode()))
        for op in every_operation(operations)
        if isinstance(result := getattr(op, "result", None), str)
    ]


def test_five_hundred_pods_each_denied_with_two_kb_reach_a_verdict_with_every_checkpoint_under_256_kb(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, _spare = blue_asg_node(aws, k8s)
    many = {"pods": str(PODS + 20)}  # kwok runs what it is given; EKS' 110-pod limit is the bed's default
    k8s.core.patch_node_status(node, {"status": {"capacity": many, "allocatable": many}})
    names = [f"p{i:03d}" for i in range(PODS)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: k8s.bare_pod(n, node=node, grace=1), names))
    k8s.wait_for(lambda: len(pods_on(k8s, node)) == PODS, timeout=180, what=f"{PODS} pods on the node")
    lam.configure("blue", DRAIN_PASS_SECONDS="10", DEADLINE_ASG_TERMINATE_SECONDS="600", HELD_NOTIFY_SECONDS="5")
    assert len(DENIAL) >= 2048
    with evictions_denied(k8s, DENIAL, probe=names[0]) as policy:
        # the drain's first pass is checkpointed with every pod denied (it says DrainStarted after it): then lifted
        lifted = Background(
            lambda: (
                k8s.wait_for(lambda: "DrainStarted" in node_events(k8s, node), timeout=300, what="DrainStarted"),
                lift_denial(k8s, policy),
            )
        )
        run = lam.run(terminate_event(aws, iid), timeout=900)
        lifted.outcome()
    inst = instance_summary(run)
    assert inst["result"] == "drained", inst
    assert_completed_by_function(aws, iid, "CONTINUE")
    sizes = payloads(run.operations)
    largest = max(sizes, key=lambda s: s[1])
    print(f"checkpoints: {len(sizes)}, the largest {largest[0]!r}: {largest[1]} bytes")
    assert largest[1] < CHECKPOINT_LIMIT_BYTES, largest
    # a pass saw every pod denied, with the policy's message (clipped), and said so in fewer bytes than one each
    denied = []
    for op in every_operation(run.operations):
        result = getattr(op, "result", None)
        if str(getattr(op, "name", "")).startswith("drain-pass-") and isinstance(result, str):
            report = DrainReport.from_dict(json.loads(result)["report"])
            if report.count("held") == PODS:
                denied.append(report)
    assert denied, "no pass saw every pod denied before the denial was lifted"
    first = denied[0]
    assert {h.reason for h in first.held} == {"admission-denied"}
    # summarized for its checkpoint: the first pods named, each with the start of the apiserver's words (its own
    # prefix, then the policy's message), clipped to the summary's MESSAGE_CHARS; the rest counted
    assert first.left_out.get("held", 0) == PODS - len(first.held) > 0, first.left_out
    assert all(DENIAL[:40] in h.message and len(h.message) <= MESSAGE_CHARS for h in first.held), first.held[0]
    assert run.metric_total("CheckpointBytes") > 0  # the pass checkpoints of a node this size are counted

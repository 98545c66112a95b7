"""The flow's late look, end to end (workflow/late_look.py): a drained instance's lifecycle action is completed only
once the node has been watched until 5 s after its cordon, and listed once more after the gates; a pod bound after
the cordon in that time (placed by the scheduler, or naming the node itself) is drained first, and named. The drain
passes themselves do not wait for it; a drain whose last LIST came after that window, no gate holding since, needs no
look. Real durable waits (``skip_time=False``): what is measured really passed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from drain_orchestrator.drain.options import LATE_LOOK_SECONDS
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from testbed.load_balancers import LoadBalancerControllerStandIn, register, target_group
from tests.integration.drain_support import pods_on
from tests.integration.lambda_support import LambdaHarness, Run
from tests.integration.late_pods_support import late_bindings

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def _empty_instance(aws: AwsSeed, k8s: KubeScenario) -> tuple[str, str]:
    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    return iid, node


def _terminate(aws: AwsSeed, lam: LambdaHarness, iid: str) -> Run:
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue")
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    return lam.run(event, skip_time=False)


def _evicted_by(run: Run, name: str) -> list[str]:
    """The pods the step ``name`` evicted, from its checkpointed result."""
    (op,) = [op for op in run.operations if getattr(op, "name", None) == name]
    return sorted(json.loads(op.result)["report"]["evicted"])


def _completed(run: Run, aws: AwsSeed) -> tuple[dict[str, Any], dict[str, Any]]:
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]  # type: ignore[index]
    (action,) = aws.lifecycle_actions()
    assert inst["result"] == "drained" and (action["state"], action["result"]) == ("COMPLETED", "CONTINUE")
    return inst, action


def test_pods_bound_within_the_late_look_are_drained_before_the_hook_is_completed(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node = _empty_instance(aws, k8s)
    scheduled = {"late-0-5": 0.5, "late-3": 3.0}
    with late_bindings(k8s, node, scheduled=scheduled, named={"named-1": 1.0}) as late:
        run = _terminate(aws, lam, iid)
        late.wait_gone()
    inst, action = _completed(run, aws)
    names = sorted([*scheduled, "named-1"])
    by_pass, by_look = _evicted_by(run, "drain-pass-0"), _evicted_by(run, "late-look")
    assert sorted(by_pass + by_look) == [f"{k8s.ns}/{n}" for n in names]
    # the drain pass found the node empty and did not wait for a fixed time: the late look drained what came after
    assert f"{k8s.ns}/late-3" in by_look and inst["late_look"] == {"late_pods": by_look}
    for name in scheduled:
        assert late.placed_by_scheduler(name), f"{name} was not bound by the scheduler"
    for name in names:  # gone before the instance was let go
        assert late.gone_by(name, action["completed_at"]), (name, late.present_at.get(name), action["completed_at"])
    assert late.cordoned_at is not None and action["completed_at"] >= late.cordoned_at + LATE_LOOK_SECONDS - 0.5


def test_a_pod_bound_six_seconds_after_the_cordon_while_a_gate_holds_is_drained_before_the_hook_is_completed(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node = _empty_instance(aws, k8s)
    tg = target_group(aws, "tg-late", delay=10)  # deregistered at the cordon, draining 10 s: the gate holds that long
    register(aws, tg, [iid])
    with (
        LoadBalancerControllerStandIn(aws, k8s, {node: iid}, [tg]) as controller,
        late_bindings(k8s, node, scheduled={"late-6": 6.0}) as late,
    ):
        run = _terminate(aws, lam, iid)
        late.wait_gone()
    inst, action = _completed(run, aws)
    assert inst["gates"]["load_balancers"]["held"] == [f"tg-late ({iid})"]
    ((_, _, deregistered_at),) = controller.deregistered
    assert action["completed_at"] >= deregistered_at + 10
    # bound past the late look's 5 s, while the gate held: the look after the gates found it
    assert inst["late_look"] == {"late_pods": [f"{k8s.ns}/late-6"]}
    assert _evicted_by(run, "late-look") == [f"{k8s.ns}/late-6"]
    assert late.placed_by_scheduler("late-6")
    assert late.bound_after_cordon("late-6") >= 6.0
    assert late.gone_by("late-6", action["completed_at"]), (late.present_at.get("late-6"), action["completed_at"])


def test_a_late_look_that_fails_is_retried_and_one_that_fails_for_good_leaves_the_verdict_drained(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    from drain_orchestrator.failures import ApiError, FailureKind
    from drain_orchestrator.workflow import runtime

    faults = iter([FailureKind.UNAVAILABLE, None, FailureKind.INVALID])

    def fault(point: str) -> None:
        if point == "late-look" and (kind := next(faults, None)) is not None:
            raise ApiError(kind, "kubernetes", f"list pods on node: {kind.value} (injected)")

    runtime.fault_injection = fault
    iid, _ = _empty_instance(aws, k8s)
    once = _terminate(aws, lam, iid)  # unavailable once: retried after its backoff, then the look ran
    inst, _ = _completed(once, aws)
    names = [str(getattr(op, "name", "")) for op in once.operations]
    assert "late-look" in names and "late-look-retry-1" in names and "late_look" not in inst
    aws.reset()
    iid, _ = _empty_instance(aws, k8s)
    for_good = _terminate(aws, lam, iid)  # invalid: no retry can help; the drain did drain
    inst, _ = _completed(for_good, aws)
    assert inst["late_look"]["error"]["step"] == "late-look" and inst["late_look"]["error"]["kind"] == "invalid"
    assert for_good.metric_total("Errors", reason="late-look-failed") == 1


def test_pods_bound_half_a_second_three_and_six_seconds_after_the_cordon_while_a_pod_is_going_are_all_drained(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node = _empty_instance(aws, k8s)
    k8s.bare_pod("slow", node=node, grace=9)  # its grace keeps the flow on the node past the late look's 5 s
    k8s.wait_for(lambda: len(pods_on(k8s, node)) == 1, timeout=30, what="the slow pod on the node")
    scheduled = {"late-0-5": 0.5, "late-3": 3.0, "late-6": 6.0}
    with late_bindings(k8s, node, scheduled=scheduled) as late:
        run = _terminate(aws, lam, iid)
        late.wait_gone()
    inst, action = _completed(run, aws)
    names = [str(getattr(op, "name", "")) for op in run.operations]
    steps = sorted({n for n in names if n.startswith("drain-pass-")})
    evicted = [p for step in steps for p in _evicted_by(run, step)]
    assert sorted(evicted) == sorted(f"{k8s.ns}/{n}" for n in [*scheduled, "slow"])  # each once, none left
    # the passes watched the node past the late look's window and listed it after: no look of its own was needed
    assert "late-look" not in names and inst.get("late_look") is None
    for name in scheduled:
        assert late.placed_by_scheduler(name), f"{name} was not bound by the scheduler"
        assert late.gone_by(name, action["completed_at"]), (name, late.present_at.get(name), action["completed_at"])
    assert late.bound_after_cordon("late-6") >= 6.0
    assert pods_on(k8s, node) == []


def test_a_drain_past_the_window_still_looks_after_a_gate_that_held_and_drains_a_pod_bound_meanwhile(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node = _empty_instance(aws, k8s)
    k8s.bare_pod("slow", node=node, grace=6)  # the drain ends past the late look's 5 s
    k8s.wait_for(lambda: len(pods_on(k8s, node)) == 1, timeout=30, what="the slow pod on the node")
    tg = target_group(aws, "tg-long", delay=16)  # deregistered at the cordon: the gate holds well past the drain
    register(aws, tg, [iid])
    with (
        LoadBalancerControllerStandIn(aws, k8s, {node: iid}, [tg]),
        late_bindings(k8s, node, scheduled={"late-11": 11.0}) as late,
    ):
        run = _terminate(aws, lam, iid)
        late.wait_gone(timeout=60)
    inst, action = _completed(run, aws)
    assert inst["gates"]["load_balancers"]["held"] == [f"tg-long ({iid})"]
    passes = [n for op in run.operations if (n := str(getattr(op, "name", ""))).startswith("drain-pass-")]
    assert f"{k8s.ns}/late-11" not in [p for step in passes for p in _evicted_by(run, step)]
    assert _evicted_by(run, "late-look") == [f"{k8s.ns}/late-11"]
    assert late.bound_after_cordon("late-11") >= 11.0
    assert late.gone_by("late-11", action["completed_at"]), (late.present_at.get("late-11"), action["completed_at"])

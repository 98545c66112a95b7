"""The function as Lambda runs it (testbed/runtime.py): the code asset built by the CDK bundler's recipe for
this machine, read-only, under awslambdaric and the Runtime Interface Emulator, with the handler and environment
from the synthesized template, checkpointing over HTTP to the durable-execution service, against the bed."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from testbed.runtime import LambdaRuntime

pytestmark = [pytest.mark.integration, pytest.mark.long_running]
OWNED = {"kubernetes.io/cluster/blue": "owned"}
HOOK = {"name": "drain", "transition": "autoscaling:EC2_INSTANCE_TERMINATING", "heartbeat_timeout": 300}


def _asg_node(aws: AwsSeed, k8s: KubeScenario) -> tuple[str, str, str]:
    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED, hooks=[HOOK])
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    return iid, node, spare


def _held_by_pdb(k8s: KubeScenario, node: str, spare: str) -> None:
    """Two pods on the node under a budget that allows no disruption until the test relaxes it."""
    k8s.deployment_on("web", 2, [node], spare, grace=1)
    k8s.pdb("web", {"app": "web"}, max_unavailable=0)
    k8s.wait_pdb("web", disruptions_allowed=0)


def _until[T](
    k8s: KubeScenario, runtime: LambdaRuntime, arn: str, predicate: Callable[[], T], timeout: float, what: str
) -> T:
    """``k8s.wait_for``, failing with what the execution and the runtime said meanwhile (its status, its history's
    last events, the runtime's and emulator's log tails)."""
    try:
        return k8s.wait_for(predicate, timeout=timeout, what=what)
    except AssertionError as timed_out:
        history = [(e.get("EventType"), e.get("Name")) for e in runtime.history(arn)][-15:]
        said = f"execution {runtime.describe(arn)}; last events {history}\n{runtime.logs(60)}"
        raise AssertionError(f"{timed_out}; {said}") from None


def _event(iid: str, token: str) -> dict[str, Any]:
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    return {**event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _count(history: list[dict[str, Any]], event_type: str, name: str | None = None) -> int:
    return sum(1 for e in history if e["EventType"] == event_type and (name is None or e.get("Name") == name))


def test_asg_terminate_drains_across_a_durable_wait_and_a_replay(
    aws: AwsSeed, k8s: KubeScenario, real_lambda: Callable[..., LambdaRuntime]
) -> None:
    iid, node, spare = _asg_node(aws, k8s)
    _held_by_pdb(k8s, node, spare)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    runtime = real_lambda(DRAIN_PASS_SECONDS="5", RECHECK_MIN_SECONDS="2", DEADLINE_ASG_TERMINATE_SECONDS="3600")

    arn = runtime.start_execution(_event(iid, token), "asg-terminate-wait")
    # the budget refuses the first pass: the execution waits durably (the invocation ends) before the next
    _until(k8s, runtime, arn, lambda: _count(runtime.history(arn), "WaitStarted"), 120, "a durable wait")
    k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})
    done = runtime.wait(arn, timeout=180)

    assert done.status == "SUCCEEDED", done.error
    (inst,) = done.result["instances"]
    assert inst["result"] == "drained" and inst["node"] == node
    assert k8s.core.read_node(node).spec.unschedulable is True
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE"
    history = runtime.history(arn)
    summary = [(e["EventType"], e.get("SubType"), e.get("Name")) for e in history]
    assert _count(history, "WaitSucceeded") >= 1, summary  # a durable wait ended ...
    assert _count(history, "InvocationCompleted") >= 2  # ... and a new invocation replayed to carry on
    # a replay re-runs the handler but not the finished steps
    for name in ("admit", "cordon"):
        started = [e for e in history if e["EventType"] == "StepStarted" and name in (e.get("Name") or "")]
        assert len(started) <= 1, (name, started)


def _steps(history: list[dict[str, Any]], event_type: str) -> list[str]:
    return [e["Id"] for e in history if e["EventType"] == event_type]


def _in_flight_drain_pass(runtime: LambdaRuntime, arn: str) -> list[str]:
    """Operation ids of drain passes started (checkpointed) but not finished: a kill now lands inside one, after
    the cordon step (which announces the drain) has finished."""
    history = runtime.history(arn)
    done = set(_steps(history, "StepSucceeded")) | set(_steps(history, "StepFailed"))
    passes = [e for e in history if e["EventType"] == "StepStarted" and e.get("Name", "").startswith("drain-pass")]
    started = [e["Id"] for e in passes]
    return [op for op in started if op not in done]


def test_runtime_killed_mid_step_resumes_without_repeating_finished_steps(
    aws: AwsSeed, k8s: KubeScenario, real_lambda: Callable[..., LambdaRuntime]
) -> None:
    iid, node, spare = _asg_node(aws, k8s)
    _held_by_pdb(k8s, node, spare)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    runtime = real_lambda(DRAIN_PASS_SECONDS="60")  # the first drain pass blocks inside one step

    arn = runtime.start_execution(_event(iid, token), "asg-terminate-crash")
    _until(k8s, runtime, arn, lambda: k8s.core.read_node(node).spec.unschedulable, 120, "node cordoned")
    (killed_in,) = _until(k8s, runtime, arn, lambda: _in_flight_drain_pass(runtime, arn), 60, "a drain pass running")
    finished = set(_steps(runtime.history(arn), "StepSucceeded"))
    (pid,) = runtime.runtime_pids()
    os.kill(pid, signal.SIGKILL)
    k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"maxUnavailable": 1}})
    done = runtime.wait(arn, timeout=240)

    assert done.status == "SUCCEEDED", done.error
    assert done.result["instances"][0]["result"] == "drained"
    assert runtime.runtime_pids() not in ([], [pid])  # a fresh runtime process finished the work
    history = runtime.history(arn)
    started = _steps(history, "StepStarted")
    assert finished and all(started.count(op) == 1 for op in finished)  # finished steps never ran again
    assert killed_in in _steps(history, "StepSucceeded")  # the interrupted step was run again and finished
    assert sorted(set(_steps(history, "StepSucceeded"))) == sorted(_steps(history, "StepSucceeded"))
    node_events = k8s.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node},source=drain-orchestrator"
    ).items
    reasons = [e.reason for e in node_events]
    # killed inside the first pass, which drained once run again: the verdict's Event alone tells the drain
    assert reasons == ["DrainCompleted"], reasons
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED"


def test_malformed_event_ends_as_a_failed_execution_naming_the_field(
    aws: AwsSeed, real_lambda: Callable[..., LambdaRuntime]
) -> None:
    runtime = real_lambda()
    arn = runtime.start_execution(samples.load("malformed-asg-terminate-missing-instance.json"), "malformed")
    done = runtime.wait(arn, timeout=120)
    assert done.status == "FAILED"
    assert done.error is not None and "detail.EC2InstanceId" in done.error["ErrorMessage"], done.error


def test_cold_start_from_invoke_to_node_cordoned(
    aws: AwsSeed, k8s: KubeScenario, real_lambda: Callable[..., LambdaRuntime]
) -> None:
    iid, node, spare = _asg_node(aws, k8s)
    k8s.deployment_on("web", 1, [node], spare, grace=1)
    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    watch_from = k8s.core.read_node(node).metadata.resource_version

    runtime = real_lambda()  # the runtime process starts now and runs its init (imports) while we invoke
    invoked = time.monotonic()
    arn = runtime.start_execution(_event(iid, token), "cold-start")
    cordoned = _wait_unschedulable(k8s, node, watch_from, timeout=120)

    cold = cordoned - runtime.emulator_started
    print(f"\ncold start -> node cordoned: {cold:.2f} s (from the invoke: {cordoned - invoked:.2f} s)")
    assert runtime.wait(arn, timeout=120).status == "SUCCEEDED"
    assert cold < 30


def _wait_unschedulable(k8s: KubeScenario, node: str, resource_version: str, timeout: float) -> float:
    """Monotonic time the node's cordon was seen, from a watch (no polling interval in the measurement)."""
    from kubernetes import watch

    w = watch.Watch()
    for change in w.stream(
        k8s.core.list_node,
        field_selector=f"metadata.name={node}",
        resource_version=resource_version,
        timeout_seconds=int(timeout),
    ):
        if change["object"].spec.unschedulable:
            w.stop()
            return time.monotonic()
    raise AssertionError(f"node {node} not cordoned within {timeout} s")

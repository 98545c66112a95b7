"""Steps on the ASG lifecycle action: heartbeat, completion, and (launch) the node's readiness check."""

from __future__ import annotations

import time

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator import deadlines
from drain_orchestrator.decide import Assessment
from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.ownership import Decision
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.heartbeat import BACKOFF, HeartbeatKeeper, action_key, beat, denied
from drain_orchestrator.workflow.results import BeatOutcome, Completion, ReadyCheck
from drain_orchestrator.workflow.step_guard import fault_of, faults_as


@durable_step
@faults_as("heartbeat", BeatOutcome, outcome="failed")
def heartbeat_step(step_ctx: StepContext, event: Interruption, instance_id: str) -> BeatOutcome:
    """One heartbeat; IAM's refusal is its own outcome ("denied"), never retried (lifecycle-access-denied)."""
    ref = event.lifecycle
    assert ref is not None
    if runtime.wsettings().dry_run:
        return BeatOutcome("dry-run", time.time())
    try:
        outcome = beat(ref, instance_id)
    except ApiError as exc:
        if exc.kind is not FailureKind.FORBIDDEN:
            BACKOFF.failure(action_key(ref, instance_id))  # the keepers of later steps wait for the flow's retry
            raise
        denied(event, exc)
        return BeatOutcome("denied", time.time())
    BACKOFF.success(action_key(ref, instance_id))
    logger.info("lifecycle heartbeat", extra={"outcome": outcome})
    return BeatOutcome(outcome, time.time())


@durable_step
def complete_step(step_ctx: StepContext, event: Interruption, decision: Decision, result: str, why: str) -> Completion:
    return complete_action(event, decision, result, why)


def complete_action(event: Interruption, decision: Decision, result: str, why: str) -> Completion:
    """CompleteLifecycleAction once (AWS answers a completed action "already done": safe to repeat)."""
    from drain_orchestrator.aws.autoscaling import complete_lifecycle_action  # noqa: PLC0415

    ref = event.lifecycle
    if ref is None:
        return Completion("not-applicable", None, time.time())
    if runtime.wsettings().dry_run:
        return Completion("dry-run", result, time.time())
    try:
        outcome = complete_lifecycle_action(
            runtime.autoscaling(),
            ref.asg_name,
            ref.hook_name,
            "ABANDON" if result == "ABANDON" else "CONTINUE",
            token=ref.token,
            instance_id=decision.instance_id,
        )
    except ApiError as exc:
        if exc.kind is not FailureKind.FORBIDDEN:
            return Completion("failed", result, time.time(), fault_of("complete-lifecycle", exc))
        denied(event, exc)
        return Completion("denied", result, time.time())
    except Exception as exc:
        return Completion("failed", result, time.time(), fault_of("complete-lifecycle", exc))
    if outcome == "completed":
        metric("LifecycleActionsCompleted", cluster=decision.cluster, kind=event.kind)
    logger.info(
        "lifecycle action",
        extra={"outcome": outcome, "result": result, "why": why, "asg": ref.asg_name, "hook": ref.hook_name},
    )
    return Completion(outcome, result, time.time())


@durable_step
def ready_step(
    step_ctx: StepContext, event: Interruption, assessment: Assessment, last_beat: float | None
) -> ReadyCheck:
    """Launch: is the instance's node registered and Ready? Also reads the hook's heartbeat pace."""
    from drain_orchestrator.aws.autoscaling import describe_hook  # noqa: PLC0415
    from drain_orchestrator.decide import locate_node  # noqa: PLC0415
    from drain_orchestrator.kube.errors import NodeGone  # noqa: PLC0415
    from drain_orchestrator.kube.node_lookup import node_ready, read_node  # noqa: PLC0415

    d = assessment.decision
    assert d.cluster is not None
    interval = deadlines.heartbeat_interval(None) if event.lifecycle is not None else None
    with HeartbeatKeeper(event.lifecycle, d.instance_id, interval, last_beat) as hb:
        try:
            if event.lifecycle is not None:
                hook = describe_hook(runtime.autoscaling(), event.lifecycle.asg_name, event.lifecycle.hook_name)
                interval = deadlines.heartbeat_interval(hook.heartbeat_timeout if hook else None)
            kube = runtime.kube(d.cluster)
            found = locate_node(kube, assessment, event)
            ready = False
            if found.node:
                node = read_node(kube, found.node)
                if node is None:
                    raise NodeGone(found.node)
                ready = node_ready(node)
        except Exception as exc:
            fault = fault_of("ready", exc)
            return ReadyCheck(time.time(), None, False, hb.last_beat, hb.hook_done, fault, interval)
    return ReadyCheck(time.time(), found.node, ready, hb.last_beat, hb.hook_done, None, interval)

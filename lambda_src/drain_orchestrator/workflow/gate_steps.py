"""The steps of the gates between a drain and its verdict (orchestrated by gates.py). They never raise.

- `pod_ips_step`: at drain start, the IPs of the node's pods (ip-mode targets are pod IPs; the pods are gone later),
  for an execution that waits on another's drain (the drainer keeps them from its first pass's LIST).
- `targets_step`: the load-balancer targets that still hold the instance (instance id, or a recorded pod IP) in a
  state where traffic may still reach it; on its first run it finds the target groups in scope and deregisters the
  instance from the ones configured by ARN (registered by hand: nobody else will).
- `volumes_step`: the node's VolumeAttachments that are not deleted yet, except those of pods the drain leaves on
  the node on purpose (DaemonSet pods kept, mirror pods, drain policy ``skip``).
- `out_of_service_ec2_step`: the non-graceful-shutdown taint on a terminated instance's Node, once EC2 reports it
  stopped or terminated.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator.observability import SECONDS, logger, metric
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.results import PodAddresses, Tainted, TargetsCheck, VolumesCheck
from drain_orchestrator.workflow.step_guard import fault_of, faults_as

OUT_OF_SERVICE_TAINT = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}


@durable_step
@faults_as("gate-pod-ips", PodAddresses)
def pod_ips_step(step_ctx: StepContext, job: DrainJob) -> PodAddresses:
    from drain_orchestrator.kube.pods import list_node_pods, pod_ips  # noqa: PLC0415

    ips = pod_ips(list_node_pods(runtime.kube(job.cluster), job.node))
    return PodAddresses(now=time.time(), ips=sorted(ips))


@durable_step
def targets_step(
    step_ctx: StepContext,
    job: DrainJob,
    ips: list[str],
    groups: list[dict[str, Any]] | None,
    previous: list[str],
    since: float,
) -> TargetsCheck:
    """``groups`` None: first check, find the target groups in scope. ``previous``: what held at the last check."""
    from drain_orchestrator.aws.elbv2 import HOLDING_STATES, REGISTERED_STATES, Elbv2, TargetGroup  # noqa: PLC0415

    api = Elbv2(runtime.elbv2())
    holding: list[str] = []
    deregistered: list[str] = []
    in_scope: list[TargetGroup] = []
    try:
        if groups is None:
            tgs = api.target_groups(job.cluster, runtime.wsettings().target_group_arns)
        else:
            tgs = [TargetGroup(**g) for g in groups]
        for tg in tgs:
            ours = {job.decision.instance_id} if tg.target_type == "instance" else set(ips)
            if tg.target_type not in ("instance", "ip") or not ours:
                continue
            targets = [t for t in api.targets(tg.arn) if t.id in ours and t.state in HOLDING_STATES]
            if groups is None and tg.by_hand:  # registered by hand: nobody else deregisters it
                to_go = [t for t in targets if t.state in REGISTERED_STATES]
                api.deregister(tg.arn, to_go)
                deregistered.extend(f"{tg.name} ({t.id})" for t in to_go)
            if targets:
                in_scope.append(tg)  # later checks look only where something still held
                holding.extend(f"{tg.name} ({t.id})" for t in targets)
    except Exception as exc:
        return TargetsCheck(now=time.time(), groups=groups or [], api_calls=api.calls, fault=fault_of("gate", exc))
    now = time.time()
    gone = set(previous) - set(holding)
    if gone:
        metric("TargetsDeregistered", len(gone), cluster=job.cluster, kind=job.event.kind)
        if not holding:
            metric("DeregistrationWaitSeconds", now - since, SECONDS, cluster=job.cluster, kind=job.event.kind)
    logger.info("load-balancer targets", extra={"holding": holding, "deregistered": deregistered, "calls": api.calls})
    return TargetsCheck(
        now=now,
        groups=[tg.to_dict() for tg in in_scope],
        holding=sorted(set(holding)),
        deregistered=deregistered,
        api_calls=api.calls,
    )


@durable_step
@faults_as("gate-volumes", VolumesCheck)
def volumes_step(step_ctx: StepContext, job: DrainJob) -> VolumesCheck:
    from drain_orchestrator.engine.volumes import node_attachments  # noqa: PLC0415

    found = node_attachments(runtime.kube(job.cluster), job.node, job.drain_options())
    if found.ignored:
        logger.info("volumes of pods left on the node do not hold the gate", extra={"ignored": found.ignored})
    return VolumesCheck(now=time.time(), attached=found.holding, ignored=found.ignored)


def _taint(job: DrainJob) -> Tainted:
    """Non-graceful node shutdown: with this taint the pod GC deletes the node's pods at once and the attach/detach
    controller detaches their volumes without waiting for the kubelet (which is gone with the instance)."""
    from drain_orchestrator.kube.errors import NodeGone  # noqa: PLC0415
    from drain_orchestrator.kube.node_marks import add_taint  # noqa: PLC0415

    try:
        changed = add_taint(runtime.kube(job.cluster), job.node, OUT_OF_SERVICE_TAINT, pin=job.pin)
    except NodeGone:  # no node left to taint: nothing to wait for either
        return Tainted(now=time.time())
    if changed:
        metric("NodesTaintedOutOfService", cluster=job.cluster, kind=job.event.kind)
        logger.info("out-of-service taint added", extra={"node": job.node})
    return Tainted(now=time.time(), tainted=True)


@durable_step
@faults_as("out-of-service", Tainted)
def out_of_service_ec2_step(step_ctx: StepContext, job: DrainJob) -> Tainted:
    """The out-of-service taint, only once EC2 itself reports the instance stopped or terminated: force-detaching
    the volumes of a node whose kubelet still runs corrupts data, so the event's word is not enough."""
    from drain_orchestrator.aws.ec2 import describe_instances  # noqa: PLC0415
    from drain_orchestrator.corroborate import out_of_service_allowed  # noqa: PLC0415

    iid = job.decision.instance_id
    facts = describe_instances(runtime.ec2(), [iid]).get(iid)
    state = None if facts is None else facts.state
    if not out_of_service_allowed(state):
        logger.warning(
            "no out-of-service taint: EC2 does not report the instance stopped or terminated",
            extra={"node": job.node, "ec2_state": state},
        )
        return Tainted(now=time.time(), ec2_state=state)
    return replace(_taint(job), ec2_state=state)


def describe(gates: dict[str, Any] | None) -> str:
    """The gates' part of a Kubernetes Event message, e.g. "; waited 12 s for load-balancer deregistration"."""
    if not gates:
        return ""
    parts = []
    lbs = gates.get("load_balancers") or {}
    if lbs.get("held"):
        parts.append(f"waited {lbs.get('waited_seconds', 0):.0f} s for load-balancer deregistration")
    vols = gates.get("volumes") or {}
    if vols.get("held"):
        parts.append(f"waited {vols.get('waited_seconds', 0):.0f} s for volumes to detach")
    if gates.get("reason"):
        parts.append(str(gates["reason"]))
    return "".join(f"; {p}" for p in parts)

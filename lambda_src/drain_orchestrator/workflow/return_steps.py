"""The steps of a return to service (returns.py says when and who; return_flow.py waits between them): a scheduled
change's update recorded on its node, one look of a watch, the return itself. Each is idempotent and never raises.
"""

from __future__ import annotations

import time

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator.kube.errors import NodeGone
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.returns import ReturnCase, event_key
from drain_orchestrator.returns import look as look_rule
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.notify import notify
from drain_orchestrator.workflow.results import ChangeStanding, ReturnDone, ReturnLook
from drain_orchestrator.workflow.step_guard import faults_as


@durable_step
@faults_as("change-record", ChangeStanding)
def change_step(step_ctx: StepContext, job: DrainJob) -> ChangeStanding:
    """Record this execution's update of its scheduled change on the node (unless a newer one is there) and say
    what the newest update means for it: current (act on it), superseded or closed (do not cordon)."""
    from drain_orchestrator.kube.change_marks import record_change  # noqa: PLC0415
    from drain_orchestrator.scheduled_change import ChangeRecord, standing  # noqa: PLC0415

    mine = ChangeRecord.of(job.event)
    try:
        newest = record_change(runtime.kube(job.cluster), job.node, mine, dry_run=runtime.wsettings().dry_run)
    except NodeGone:
        return ChangeStanding(now=time.time(), gone=True)
    said = standing(newest, mine)
    if said != "current":
        logger.info(
            "scheduled change updated since this event",
            extra={"standing": said, "status": newest.status, "updated": newest.updated, "event_updated": mine.updated},
        )
    return ChangeStanding(now=time.time(), standing=said)


@durable_step
@faults_as("return-look", ReturnLook)
def return_look_step(step_ctx: StepContext, job: DrainJob, case: ReturnCase, since: float) -> ReturnLook:
    """Is the node to be returned now? Its marks, readiness and boot (one GET), EC2's state of its instance (one
    DescribeInstances), and for a scheduled change its newest update on the node."""
    from drain_orchestrator.aws import ec2 as ec2_api  # noqa: PLC0415
    from drain_orchestrator.kube.node_marks import get_node  # noqa: PLC0415
    from drain_orchestrator.kube.return_marks import state_of  # noqa: PLC0415
    from drain_orchestrator.scheduled_change import ChangeRecord, newest_of, standing  # noqa: PLC0415

    event = job.event
    try:
        body = get_node(runtime.kube(job.cluster), job.node)
    except NodeGone:
        verdict, why = look_rule(case, None, job.run_id, None, None, since)
        return ReturnLook(now=time.time(), verdict=verdict, reason=why)
    change = None
    if event.change_arn is not None:
        newest = newest_of((body.get("metadata") or {}).get("annotations") or {}, event.change_arn)
        change = None if newest is None else standing(newest, ChangeRecord.of(event))
    facts = ec2_api.describe_instances(runtime.ec2(), [job.decision.instance_id]).get(job.decision.instance_id)
    ec2_state = "terminated" if facts is None else facts.state
    verdict, why = look_rule(case, state_of(body), job.run_id, ec2_state, change, since)
    logger.info("return look", extra={"verdict": verdict, "why": why, "ec2_state": ec2_state, "case": case})
    return ReturnLook(now=time.time(), verdict=verdict, reason=why)


@durable_step
@faults_as("return", ReturnDone, status="failed")
def return_step(step_ctx: StepContext, job: DrainJob, why: str, by_change: bool = False) -> ReturnDone:
    """Take back the node's surges and make it schedulable again, if its return mark still names this execution
    (``by_change``: or any execution of this scheduled change, for its closed update); then the node's Event, the
    ``returned-to-service`` notification and ``NodesReturned``."""
    from drain_orchestrator.drain_claim import NodeClaim  # noqa: PLC0415
    from drain_orchestrator.engine.surge_sweep import restore_staying  # noqa: PLC0415
    from drain_orchestrator.kube.node_claim import ANN_DRAINER  # noqa: PLC0415
    from drain_orchestrator.kube.node_marks import FIELD_MANAGER, get_node  # noqa: PLC0415
    from drain_orchestrator.kube.node_records import node_event  # noqa: PLC0415
    from drain_orchestrator.kube.return_marks import return_node  # noqa: PLC0415
    from drain_orchestrator.returns import cordoned_by_another, may_return  # noqa: PLC0415

    ws = runtime.wsettings()
    kube = runtime.kube(job.cluster)
    node, event = job.node, job.event
    change = event_key(event) if by_change else None
    taint = job.drain_options().drain_taint
    surges: list[str] = []
    try:
        # asked first so that a refused return takes back no surge; the write asks again under the node's version
        body = get_node(kube, node)
        annotations = (body.get("metadata") or {}).get("annotations") or {}
        refusal = may_return(annotations, NodeClaim.from_json(annotations.get(ANN_DRAINER)), job.run_id, change)
        if refusal is None and cordoned_by_another(body, FIELD_MANAGER):
            refusal = "cordoned-by-another"
        if refusal is None and not ws.dry_run:  # first the surges: the node's record of them goes with the uncordon
            notes = restore_staying(kube, node, time.time(), why="the node returned to service")
            surges = [f"{n.workload}: {n.status}: {n.detail}" for n in notes]
        taint_key = None if taint is None else taint[0]
        done = return_node(kube, node, job.run_id, event=change, taint_key=taint_key, dry_run=ws.dry_run)
    except NodeGone:
        return ReturnDone(now=time.time(), status="node-gone", surge_restored=surges)
    if done.status != "returned":
        logger.info("node not returned to service", extra={"status": done.status, "why": why})
        return ReturnDone(now=time.time(), status=done.status, surge_restored=surges)
    metric("NodesReturned", cluster=job.cluster, kind=event.kind)
    message = f"returned to service after {event.kind} ({why}; event {event.event_id})"
    node_event(kube, node, "ReturnedToService", message, dry_run=ws.dry_run)
    logger.info("node returned to service", extra={"why": why, "surge_restored": surges})
    said = notify("returned-to-service", job, {"reason": why, **({"surge_restored": surges} if surges else {})})
    return ReturnDone(now=time.time(), status="returned", surge_restored=surges, notified=said)

"""What a node's drain says: the announcement of its start, and the last word on it.

`announce` runs once after the cordon's write, for the execution holding the phase claims: metric, the
NodeCordoned Event for a cordon only, the "started" notification; in the begin step that cordoned (begin.py), or in
a step of its own ("announce") after a cordon step. Either way a crash after the notification and before the
step's checkpoint repeats it (at least once, as the report's notification). A drain's DrainStarted Event waits for
`start_event_step`, run once the drain outlives its first pass: a drain done in one pass is told by its verdict's
Event alone (one request fewer a node in a storm).
`report` runs once the lifecycle action is completed, whatever happened before (in the verdict step, verdict.py, or
a step of its own, "report"): phase claim (the holder of the
node's drain took it in its settle write, for the result it drained to), metrics, Kubernetes Event and the final
notification (``completed``, ``failed``, or ``stopped`` when an operator's decision ended it).
Every part is best effort and independent:
an unreachable apiserver still gets a notification (without the claim that de-duplicates it across executions),
a failed SNS publish still leaves the Event and the metrics. Never raises.
"""

from __future__ import annotations

import time

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator.observability import SECONDS, logger, metric
from drain_orchestrator.outcome import InstanceOutcome, Result, report_phase, rule
from drain_orchestrator.timefmt import deadline_fields, iso_utc
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.gate_steps import describe
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.notify import notify
from drain_orchestrator.workflow.results import Announced, Cordoned, EventWritten, Reported


@durable_step
def announce_step(step_ctx: StepContext, job: DrainJob, cordoned: Cordoned) -> Announced:
    return announce(job, cordoned)


def announce(job: DrainJob, cordoned: Cordoned) -> Announced:
    from drain_orchestrator.kube.node_records import node_event  # noqa: PLC0415

    ws = runtime.wsettings()
    event, node = job.event, job.node
    kube = None
    try:
        kube = runtime.kube(job.cluster)
    except Exception as exc:  # Events are best effort; the notification still goes out
        logger.warning("no Kubernetes client for the announcement", extra={"error": str(exc)[:300]})
    if cordoned.cordon_claimed:
        metric("NodesCordoned", cluster=job.cluster, kind=event.kind)
        if kube is not None and not cordoned.drain_claimed:  # a drain says both in its DrainStarted Event
            message = f"cordoned for {event.kind} (event {event.event_id})"
            node_event(kube, node, "NodeCordoned", message, dry_run=ws.dry_run)
    if not cordoned.drain_claimed:
        return Announced(notified=False)
    when = deadline_fields(job.plan.deadline, cordoned.now)
    what = "cordoned and draining" if cordoned.cordon_claimed else "draining"
    return Announced(notified=notify("started", job, dict(when)), drain_start=what)


@durable_step
def start_event_step(step_ctx: StepContext, job: DrainJob, what: str, started_at: float) -> EventWritten:
    """The DrainStarted Event of a drain that outlived its first pass (held, or its pass failed): best effort."""
    from drain_orchestrator.kube.node_records import node_event  # noqa: PLC0415

    now = time.time()
    when = deadline_fields(job.plan.deadline, now)
    message = (
        f"{what} for {job.event.kind} since {iso_utc(started_at)}, deadline {when['deadline']}, "
        f"{when['seconds_left']} s left (event {job.event.event_id})"
    )
    try:
        node_event(runtime.kube(job.cluster), job.node, "DrainStarted", message, dry_run=runtime.wsettings().dry_run)
    except Exception as exc:  # Events are best effort
        logger.warning("no DrainStarted Event", extra={"error": str(exc)[:300]})
        return EventWritten(written=False)
    return EventWritten(written=True)


@durable_step
def report_step(step_ctx: StepContext, job: DrainJob, outcome: InstanceOutcome, started_at: float) -> Reported:
    return report(job, outcome, started_at)


def report(job: DrainJob, outcome: InstanceOutcome, started_at: float) -> Reported:
    from drain_orchestrator.kube.errors import NodeGone  # noqa: PLC0415
    from drain_orchestrator.kube.node_records import claim, node_event  # noqa: PLC0415

    ws = runtime.wsettings()
    now = time.time()
    duration = round(now - started_at, 3)
    result = Result(str(outcome.result))  # set by the verdict
    said = rule(result).notification
    drained = rule(result).success
    stopped = said == "stopped"  # an operator's decision ended the drain (approval.py)
    phase = report_phase(result)
    kube = None
    try:
        if job.decision.node is None:  # the node could not even be located: nothing to claim on
            raise LookupError("no node")
        kube = runtime.kube(job.cluster)
        held = outcome.phase_held  # taken in the drain's settle write: a write only if the result changed since
        first = held == phase or claim(kube, job.node, phase, job.run_id, dry_run=ws.dry_run, release=held, pin=job.pin)
    except NodeGone:
        first, kube = True, None  # no node left to hold the claim or an Event: this execution reports
    except Exception as exc:
        # the apiserver cannot arbitrate: report anyway (a duplicate notification beats none)
        logger.warning("phase claim failed", extra={"phase": phase, "error": str(exc)[:300]})
        first, kube = True, None
    if first and not ws.dry_run:
        _count(job, result, duration)
        if kube is not None:
            what = "drained" if drained else "not drained"
            if stopped and outcome.approval is not None:
                # who decided is for the notification's subscribers, not for every reader of the node's Events
                what = f"stopped by an operator's decision ({outcome.approval.get('decision')})"
            gates = describe(outcome.gates)
            message = (
                f"{what} ({result}) after {duration:.0f} s for {job.event.kind}{gates} (event {job.event.event_id})"
            )
            node_event(
                kube,
                job.node,
                "DrainCompleted" if drained else "DrainFailed",
                message,
                event_type="Normal" if drained else "Warning",
                dry_run=ws.dry_run,
            )
    verdict = outcome.reported()
    notified = first and said is not None and notify(said, job, {"duration_seconds": duration, **verdict})
    if not drained:
        logger.warning("drain did not finish", extra={"verdict": verdict})
    return Reported(duration=duration, notified=notified, now=now)


def _count(job: DrainJob, result: Result, duration: float) -> None:
    """The result's metric (outcome.RULES), counted by the execution holding the phase claim: duplicate
    deliveries do not inflate the numbers."""
    cluster, kind = job.cluster, job.event.kind
    name = rule(result).metric
    if name == "Errors":
        metric("Errors", reason="drain-failed")  # a literal: the runbook test scans the reasons
    elif name is not None:
        metric(name, cluster=cluster, kind=kind)
    if rule(result).success:
        metric("DrainDurationSeconds", duration, SECONDS, cluster=cluster, kind=kind)

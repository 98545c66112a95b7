"""The durable execution of one EventBridge event: admit (settings, parse, decide) -> per-instance flows -> result.

    admit: settings (validated once per container), parse (the parser loads only here) and decide (one
    DescribeInstances, ASG tags if needed) in one step, one checkpoint before any instance's flow; a decision that
    failed is retried with durable waits ("decide-retry-N"); an event naming more than DECIDE_CHUNK instances, or a
    Capacity Block's (its instances are listed first), is decided in steps of its own ("decide", "decide-1", ...)
    -> for each owned instance, bounded concurrency (a map, "instances", a child context per instance; the one
    instance of an event naming one runs in the execution's own context): drain_flow (or launch_flow for
    asg-launch) -> the execution
    fails only after every instance reached its verdict, when one of them failed (so the event reaches the
    dead-letter queue). The surge sweep's schedule (workflow/sweep_flow.py) and the liveness check's
    (workflow/liveness_flow.py) run a "settings" step and branch off before any parse.
    (Executions of earlier releases ran "settings", "parse" and "decide" as steps of their own.)

Replay rules (aws-durable-execution-sdk-python): the handler body re-runs from the top on every invocation, so
everything that reads the clock, calls an API or emits a metric happens inside a step; step names are stable
(numbered passes, instance ids); finished steps return their checkpointed results and are never repeated.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from aws_durable_execution_sdk_python import BatchResult, DurableContext, StepContext, durable_step
from aws_durable_execution_sdk_python.config import CompletionConfig, MapConfig
from aws_durable_execution_sdk_python.exceptions import ExecutionError, InvocationError

from drain_orchestrator import deadlines
from drain_orchestrator.clip import clip
from drain_orchestrator.decide import Assessment, decide_event
from drain_orchestrator.interruption import Ignored, Interruption, MalformedEvent
from drain_orchestrator.kinds import rule_of
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.outcome import InstanceOutcome
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.settings import SettingsError
from drain_orchestrator.workflow import runtime, schedules
from drain_orchestrator.workflow.checkpoint import Checkpointed, RunSettings, StepFault, step_config
from drain_orchestrator.workflow.event_retry import retried
from drain_orchestrator.workflow.step_guard import faults_as

# A step's result is one checkpoint (256 KB at most): decide in chunks whose assessments stay far below it
# (about 80 KB for 200 instances), so a Health event naming thousands of instances still checkpoints.
DECIDE_CHUNK = 200
# Log lines and the execution's result name at most this many instances; their counts are complete.
NAMED = 20


class WorkflowError(RuntimeError):
    """The execution fails so its event reaches the dead-letter queue (after every verdict was reached)."""


@dataclass(frozen=True)
class Parsed(Checkpointed):
    event: dict[str, Any] | None = None
    ignored: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class Decided(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    assessments: list[dict[str, Any]] = field(default_factory=list)
    fault: StepFault | None = None


@dataclass(frozen=True)
class Admitted(Checkpointed):
    """The "admit" step: the settings' run id, the parsed event (or why it is ignored), and the decision when
    this step could make it (None: the event is decided in "decide" steps of its own)."""

    _nested: ClassVar[dict[str, Any]] = {"settings": RunSettings, "parsed": Parsed, "decided": Decided}
    settings: RunSettings
    parsed: Parsed
    decided: Decided | None = None


def run(raw_event: Any, context: DurableContext) -> dict[str, Any]:
    event_id = raw_event.get("id") if isinstance(raw_event, dict) else None
    # a warm container serves many events: start each invocation's log context afresh
    logger.clear_state()
    logger.thread_safe_clear_keys()
    logger.set_correlation_id(str(event_id) if event_id else None)
    context.set_logger(logger)
    if schedules.is_sweep(raw_event) or schedules.is_liveness(raw_event):  # a schedule's own input
        context.step(settings_step(), name="settings", config=step_config(RunSettings))
        if schedules.is_sweep(raw_event):  # not an AWS event: no parse, no decide
            from drain_orchestrator.workflow import sweep_flow  # noqa: PLC0415 - only the schedule's ticks need it

            return sweep_flow.run(raw_event, context)
        from drain_orchestrator.workflow import liveness_flow  # noqa: PLC0415 - only the schedule's ticks need it

        return liveness_flow.run(raw_event, context)  # settings valid, one step, counted
    admitted: Admitted = context.step(admit_step(raw_event), name="admit", config=step_config(Admitted))
    cfg, parsed = admitted.settings, admitted.parsed
    if parsed.event is None:
        shown_id = clip(event_id) if isinstance(event_id, str) else None
        return {"event_id": shown_id, "ignored": parsed.ignored, "message": parsed.message, "instances": []}
    event = Interruption.from_dict(parsed.event)
    logger.append_keys(kind=event.kind)
    if event.capacity_reservation_id is not None:  # a Capacity Block's: its instances once its drain is due
        from drain_orchestrator.workflow import block_flow  # noqa: PLC0415 - only a Capacity Block's events need it

        event, fault = block_flow.reservation_event(context, event)
        if fault is not None:
            raise WorkflowError(f"cannot list the reservation's instances: {fault.kind}: {fault.message}")
        if not event.instance_ids:
            return _no_instances(event)
    assessments = [Assessment.from_dict(a) for a in _decide(context, event, admitted.decided)]
    acted = [a for a in assessments if _acted_on(a)]
    others = [a.decision for a in assessments if not _acted_on(a)]
    # each branch gets the event narrowed to its instance: a copy of thousands of ids per branch would not fit
    items = [
        {"event": _branch_event(event, a.decision).to_dict(), "assessment": a.to_dict(), "run_id": cfg.run_id}
        for a in acted
    ]
    results: list[InstanceOutcome] = []
    if len(items) == 1:
        results = [_in_place(context, items[0])]
    elif items:
        batch: BatchResult[dict[str, Any]] = context.map(
            items,
            _instance_branch,
            name="instances",
            config=MapConfig(
                max_concurrency=cfg.max_concurrent_nodes,
                completion_config=CompletionConfig.all_completed(),  # type: ignore[no-untyped-call]
            ),
        )
        results = [InstanceOutcome.from_dict(r) for r in batch.get_results() if r is not None]
        if batch.has_failure:
            errors = "; ".join(clip(str(e.message), 200) for e in batch.get_errors()[:NAMED] if e)
            raise WorkflowError(f"{batch.failure_count} of {len(items)} instance workflows failed: {errors}")
    failed = [r for r in results if r.failed]
    if failed:
        more = f"; and {len(failed) - NAMED} more" if len(failed) > NAMED else ""
        raise WorkflowError(
            f"{len(failed)} of {len(results)} drains failed after their verdict: "
            + "; ".join(_failure_line(r) for r in failed[:NAMED])
            + more
        )
    return outcome(event, results, others)


def _no_instances(event: Interruption) -> dict[str, Any]:
    """A reservation EC2 lists no instance in: nothing to do, said like an ignored event."""
    message = f"capacity reservation {event.capacity_reservation_id} has no instances"
    ignored = {"ignored": "no-instances", "message": message}
    return {"event_id": event.event_id, "kind": event.kind, **ignored, "instances": []}


def outcome(event: Interruption, results: list[InstanceOutcome], others: list[Decision]) -> dict[str, Any]:
    """The execution's result, checkpointed like a step's (256 KB at most): the first few instances in full,
    every instance counted."""
    return {
        "event_id": event.event_id,
        "kind": event.kind,
        "instances": [r.to_dict() for r in results[:NAMED]],
        "instances_count": dict(Counter(str(r.result or r.action) for r in results)),
        "not_acted_on": [d.to_dict() for d in others[:NAMED]],
        "not_acted_on_count": dict(Counter(d.reason.value for d in others)),
    }


def _failure_line(summary: InstanceOutcome) -> str:
    error = summary.error or (summary.lifecycle or {}).get("error")
    if not error:  # a failure by its result alone (lifecycle-access-denied)
        return f"{summary.instance_id}: {summary.result}"
    return f"{summary.instance_id}: {error.get('step')} {error.get('kind')}: {error.get('message')}"


def _branch_event(event: Interruption, decision: Decision) -> Interruption:
    """The event narrowed to one instance. A drain for another's hook (ACTION_FOREIGN_HOOK) runs without it:
    the hook is never heartbeated nor completed here, and no gate holds it."""
    narrowed = replace(event, instance_ids=(decision.instance_id,))
    return replace(narrowed, lifecycle=None) if decision.reason is Reason.HOOK_NOT_OURS else narrowed


def _acted_on(assessment: Assessment) -> bool:
    return assessment.decision.acts


def _decide(context: DurableContext, event: Interruption, admitted: Decided | None) -> list[dict[str, Any]]:
    """The admit step's decision (retried as "decide-retry-N" when it failed), or chunk by chunk (one step each:
    "decide", "decide-1", ...)."""
    if admitted is not None:
        return _decide_chunk(context, event, "decide", first=admitted)
    ids = event.instance_ids
    decided: list[dict[str, Any]] = []
    for k, start in enumerate(range(0, len(ids), DECIDE_CHUNK)):
        part = event if len(ids) <= DECIDE_CHUNK else replace(event, instance_ids=ids[start : start + DECIDE_CHUNK])
        decided.extend(_decide_chunk(context, part, "decide" if k == 0 else f"decide-{k}"))
    return decided


def _decide_chunk(
    context: DurableContext, event: Interruption, name: str, first: Decided | None = None
) -> list[dict[str, Any]]:
    """Decide, retrying AWS failures with durable waits for as long as the event's deadline allows; without facts
    no instance can be claimed (it may be another cluster's), so giving up fails the execution. ``first``: the
    decision the admit step already tried."""
    until = deadlines.decide_deadline(event, runtime.wsettings())
    res = retried(context, lambda: decide_step(event), name, Decided, until, first=first)
    if res.fault is not None:
        raise WorkflowError(f"cannot decide: {res.fault.kind}: {res.fault.message}")
    return res.assessments


def _in_place(context: DurableContext, item: dict[str, Any]) -> InstanceOutcome:
    """The one instance of an event naming one: its flow in the execution's own context, without a map and its
    branch's child context (two durable operations fewer). The same keys on its log lines, the same outcome, and a
    failure ends the execution as a failed branch of the map does (the SDK's own errors pass through)."""
    try:
        return InstanceOutcome.from_dict(_instance_branch(context, item, 0, [item]))
    except ExecutionError:
        raise
    except Exception as exc:
        if isinstance(exc, InvocationError) and exc.is_retryable():
            raise
        raise WorkflowError(f"1 of 1 instance workflows failed: {clip(str(exc), 200)}") from exc


def _instance_branch(ctx: DurableContext, item: dict[str, Any], index: int, items: Any) -> dict[str, Any]:
    event = Interruption.from_dict(item["event"])
    assessment = Assessment.from_dict(item["assessment"])
    d = assessment.decision
    # map branches run in threads: per-thread keys, or one instance's keys would land on another's lines
    logger.thread_safe_clear_keys()
    logger.thread_safe_append_keys(instance_id=d.instance_id, cluster=d.cluster)
    # the branch's result is checkpointed as JSON (the map's default serdes): the outcome's plain form
    # the flows load here, not at cold start: an event the admission skips (another cluster's instance, a stale
    # warning) never imports the drain's modules (bench/cold_import.py measures what this saves)
    if rule_of(event.kind).flow == "launch":
        from drain_orchestrator.workflow.launch_flow import launch_instance  # noqa: PLC0415

        return launch_instance(ctx, event, assessment).to_dict()
    from drain_orchestrator.workflow.drain_flow import drain_instance  # noqa: PLC0415

    return drain_instance(ctx, event, assessment, item["run_id"]).to_dict()


@durable_step
def admit_step(step_ctx: StepContext, raw_event: Any) -> Admitted:
    """Settings, parse and (for a few instances named outright) decide in one step: one checkpoint before any
    instance's flow. Each part logs and counts as its own step did; a crash repeats them all, as a crash repeated
    the one it was in (they change nothing)."""
    cfg = load_settings()
    parsed = parse(raw_event)
    if parsed.event is None:
        return Admitted(cfg, parsed)
    event = Interruption.from_dict(parsed.event)
    if event.capacity_reservation_id is not None or len(event.instance_ids) > DECIDE_CHUNK:
        return Admitted(cfg, parsed)  # its instances listed first, or a decision in chunks: steps of their own
    return Admitted(cfg, parsed, decide(event))


@durable_step
def settings_step(step_ctx: StepContext) -> RunSettings:
    return load_settings()


def load_settings() -> RunSettings:
    try:
        cfg = runtime.load_config()
    except SettingsError as exc:
        metric("Errors", reason="settings")
        logger.error("invalid settings", extra={"variable": exc.variable, "error": str(exc)})
        raise
    return RunSettings(cfg.workflow.max_concurrent_nodes, cfg.workflow.dry_run, uuid.uuid4().hex)


@durable_step
def parse_step(step_ctx: StepContext, raw_event: Any) -> Parsed:
    return parse(raw_event)


def parse(raw_event: Any) -> Parsed:
    # the parser (pydantic + Powertools models) loads only here: replays read this step's checkpoint instead
    from drain_orchestrator.events import parse_event  # noqa: PLC0415

    detail_type = raw_event.get("detail-type") if isinstance(raw_event, dict) else None
    try:
        parsed = parse_event(raw_event)
    except MalformedEvent as exc:
        metric("EventsReceived", kind="malformed")
        metric("Errors", reason="malformed-event")
        logger.error("malformed event", extra={"field": exc.path, "error": str(exc)})
        raise
    if isinstance(parsed, Ignored):
        metric("EventsReceived", kind="ignored")
        metric("EventsIgnored", reason=parsed.reason)
        shown = clip(detail_type) if isinstance(detail_type, str) else None
        logger.info("event ignored", extra={"reason": parsed.reason, "detail_type": shown, "why": parsed.message})
        return Parsed(ignored=parsed.reason, message=parsed.message)
    metric("EventsReceived", kind=parsed.kind)
    ids = parsed.instance_ids
    logger.info("event received", extra={"kind": parsed.kind, "instances": len(ids), "instance_ids": list(ids[:NAMED])})
    return Parsed(event=parsed.to_dict())


@durable_step
def decide_step(step_ctx: StepContext, event: Interruption) -> Decided:
    return decide(event)


@faults_as("decide", Decided)
def decide(event: Interruption) -> Decided:
    from drain_orchestrator.workflow.instance_reads import facts_source  # noqa: PLC0415 - not on the init's path

    facts = facts_source()
    assessments = decide_event(event, runtime.settings(), facts, now=time.time(), ws=runtime.wsettings())
    # not ours (or nothing to do) is a decision, never an error or a retry loop: one metric and one line per
    # reason, however many instances share it
    by_reason: dict[str, list[Assessment]] = {}
    for a in assessments:
        if not _acted_on(a):
            by_reason.setdefault(a.decision.reason.value, []).append(a)
    for reason, group in by_reason.items():
        metric("EventsIgnored", len(group), reason=reason, kind=event.kind)
        logger.info(
            "instance not acted on" if len(group) == 1 else "instances not acted on",
            extra={
                "reason": reason,
                "count": len(group),
                "instance_id": group[0].decision.instance_id if len(group) == 1 else None,
                "instance_ids": [a.decision.instance_id for a in group[:NAMED]],
                "cluster": sorted({a.decision.cluster for a in group if a.decision.cluster})[:NAMED] or None,
                "lifecycle_hook": event.lifecycle.hook_name if event.lifecycle else None,
                "lifecycle_action": "left to its owner" if event.lifecycle else None,
            },
        )
    foreign = [a.decision for a in assessments if _acted_on(a) and a.decision.reason is Reason.HOOK_NOT_OURS]
    if foreign and event.lifecycle is not None:
        logger.info(
            "draining for a lifecycle hook that is not ours (ACTION_FOREIGN_HOOK): the hook is left to its owner",
            extra={
                "reason": Reason.HOOK_NOT_OURS.value,
                "lifecycle_hook": event.lifecycle.hook_name,
                "instance_ids": [d.instance_id for d in foreign[:NAMED]],
                "action": foreign[0].action,
            },
        )
    return Decided(now=time.time(), assessments=[_without_tags(a).to_dict() for a in assessments])


def _without_tags(assessment: Assessment) -> Assessment:
    """What the drain needs after the decision (DNS name, zone); tags can be 50 x 384 bytes per instance."""
    facts = assessment.facts
    if facts is None:
        return assessment
    return replace(assessment, facts=replace(facts, instance_tags={}, asg_tags=None))

"""The durable drain workflow: one EventBridge event -> per-instance workflows of its kind.

    parse -> decide (one DescribeInstances, ASG tags if needed) -> for each owned instance, bounded concurrency:
      locate node (+ the hook's timeouts) -> [scheduled-change: durable wait until window start - lead]
      -> cordon + annotate -> drain passes separated by durable waits, heartbeats on the lifecycle hook
      -> finish: CompleteLifecycleAction, metrics, one notification per phase, a Kubernetes Event per phase
    asg-launch: wait (durably) for the node to register and be Ready, then CONTINUE (timeout -> configurable).

Replay rules (aws-durable-execution-sdk-python): the handler body re-runs from the top on every invocation, so
everything that reads the clock, calls an API or emits a metric happens inside a step; step names are stable
(numbered passes, instance ids); finished steps return their checkpointed results and are never repeated. Every
action is idempotent against the cluster and AWS, so a crash mid-step repeats at most that step, harmlessly.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from aws_durable_execution_sdk_python import BatchResult, DurableContext, StepContext, durable_step
from aws_durable_execution_sdk_python.config import CompletionConfig, Duration, MapConfig, StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets

from drain_orchestrator.decide import Assessment, BotoFacts, decide_event, with_hook_deadline
from drain_orchestrator.interruption import Ignored, Interruption, MalformedEvent
from drain_orchestrator.observability import SECONDS, logger, metric
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.settings import Settings, SettingsError
from drain_orchestrator.workflow_settings import WorkflowSettings

if TYPE_CHECKING:
    from drain_orchestrator.kube.rest import Kube

P = ParamSpec("P")
R = TypeVar("R")
NO_RETRY = StepConfig(retry_strategy=RetryPresets.none())
# Where a test simulates a crash (a Lambda killed mid-invocation): called with a point's name. None in production.
fault_injection: Any = None


class WorkflowError(RuntimeError):
    """An instance's workflow could not finish; the execution fails so its event reaches the dead-letter queue."""


# ---- settings and per-container clients ------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    settings: Settings
    workflow: WorkflowSettings


_config: Config | None = None
_config_error: SettingsError | None = None


def load_config(env: Any = None) -> Config:
    """Validated once per container (cold start); a bad value fails every invocation with the variable's name."""
    global _config, _config_error  # noqa: PLW0603 - per-container cache, the Lambda pattern
    if env is None and _config is not None:
        return _config
    if env is None and _config_error is not None:
        raise _config_error
    try:
        cfg = Config(Settings.from_env(env or os.environ), WorkflowSettings.from_env(env or os.environ))
    except SettingsError as exc:
        if env is None:
            _config_error = exc
        raise
    if env is None:
        _config = cfg
    return cfg


def reset_config() -> None:
    """Forget cached settings and clients (tests and the CLI change the environment between runs)."""
    global _config, _config_error
    _config, _config_error = None, None
    _clients.clear()


_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def _client(name: str) -> Any:
    with _clients_lock:
        if name not in _clients:
            from drain_orchestrator.aws import clients  # noqa: PLC0415

            if name == "ec2":
                _clients[name] = clients.ec2_client()
            elif name == "autoscaling":
                _clients[name] = clients.autoscaling_client()
            elif name == "sns":
                from drain_orchestrator.aws.sns import sns_client  # noqa: PLC0415

                _clients[name] = sns_client()
            elif name == "connector":
                from drain_orchestrator.kube.client import ClusterConnector  # noqa: PLC0415

                _clients[name] = ClusterConnector()
        return _clients[name]


def _kube(cluster: str) -> Kube:
    """A counted REST handle on the cluster (EKS token auth, CA verified), cached per container."""
    key = f"kube:{cluster}"
    with _clients_lock:
        cached = _clients.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    from drain_orchestrator.kube.rest import Kube  # noqa: PLC0415 - kubernetes only when a node is touched

    kube = Kube(_client("connector").api_client(cluster), pool_size=32)
    with _clients_lock:
        _clients[key] = kube
    return kube


def _fault(point: str) -> None:
    if fault_injection is not None:
        fault_injection(point)


# ---- entry -------------------------------------------------------------------------------------------------------
def run(raw_event: Any, context: DurableContext) -> dict[str, Any]:
    event_id = raw_event.get("id") if isinstance(raw_event, dict) else None
    # a warm container serves many events: start each invocation's log context afresh
    logger.clear_state()
    logger.thread_safe_clear_keys()
    logger.set_correlation_id(str(event_id) if event_id else None)
    context.set_logger(logger)
    cfg = context.step(_load_config_step(), name="settings", config=NO_RETRY)
    settings = load_config().settings  # validated by the step above; cached for the container
    parsed = context.step(_parse_step(raw_event), name="parse", config=NO_RETRY)
    if parsed.get("ignored"):
        return {"event_id": event_id, "ignored": parsed["ignored"], "message": parsed["message"], "instances": []}
    event = Interruption.from_dict(parsed["event"])
    logger.append_keys(kind=event.kind)
    assessments = context.step(_decide_step(event, settings), name="decide")
    decisions = [Assessment.from_dict(a).decision for a in assessments]
    items = [
        {"event": event.to_dict(), "assessment": a, "run_id": cfg["run_id"]}
        for a, d in zip(assessments, decisions, strict=True)
        if d.owned and d.action != "skip"
    ]
    others = [d.to_dict() for d in decisions if not (d.owned and d.action != "skip")]
    results: list[dict[str, Any]] = []
    if items:
        batch: BatchResult[dict[str, Any]] = context.map(
            items,
            _instance_branch,
            name="instances",
            config=MapConfig(
                max_concurrency=cfg["max_concurrent_nodes"],
                completion_config=CompletionConfig.all_completed(),  # type: ignore[no-untyped-call]
            ),
        )
        results = [r for r in batch.get_results() if r is not None]
        if batch.has_failure:
            errors = "; ".join(str(e.message if e else "unknown error") for e in batch.get_errors() if e)
            raise WorkflowError(f"{batch.failure_count} of {len(items)} instance workflows failed: {errors}")
    return {"event_id": event.event_id, "kind": event.kind, "instances": results, "not_acted_on": others}


def _wsettings() -> WorkflowSettings:
    return load_config().workflow


def _errors_counted(step: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Count and log a step's failure (metric Errors, reason "<step>-failed") before the SDK retries it or fails
    the execution: an unreachable API server or a missing access entry must show up on the dashboard."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def run_step(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                metric("Errors", reason=f"{step}-failed")
                logger.error(f"{step} step failed", extra={"error_type": type(exc).__name__, "error": str(exc)[:500]})
                raise

        return run_step

    return wrap


# ---- top-level steps ---------------------------------------------------------------------------------------------
@durable_step
def _load_config_step(step_ctx: StepContext) -> dict[str, Any]:
    try:
        cfg = load_config()
    except SettingsError as exc:
        metric("Errors", reason="settings")
        logger.error("invalid settings", extra={"variable": exc.variable, "error": str(exc)})
        raise
    # A unique id for this execution, stable across its replays: who announces each phase of a node's drain.
    return {
        "max_concurrent_nodes": cfg.workflow.max_concurrent_nodes,
        "dry_run": cfg.workflow.dry_run,
        "run_id": uuid.uuid4().hex,
    }


@durable_step
def _parse_step(step_ctx: StepContext, raw_event: Any) -> dict[str, Any]:
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
        logger.info("event ignored", extra={"reason": parsed.reason, "detail_type": detail_type, "why": parsed.message})
        return {"ignored": parsed.reason, "message": parsed.message}
    metric("EventsReceived", kind=parsed.kind)
    logger.info("event received", extra={"kind": parsed.kind, "instance_ids": list(parsed.instance_ids)})
    return {"event": parsed.to_dict()}


@durable_step
@_errors_counted("decide")
def _decide_step(step_ctx: StepContext, event: Interruption, settings: Settings) -> list[dict[str, Any]]:
    assessments = decide_event(event, settings, BotoFacts(_client("ec2"), _client("autoscaling")))
    for a in assessments:
        d = a.decision
        if not d.owned or d.action == "skip":
            # The seed's fix: not ours (or nothing to do) is a decision, never an error or a retry loop.
            metric("EventsIgnored", reason=d.reason.value, kind=event.kind)
            logger.info(
                "instance not acted on",
                extra={
                    "instance_id": d.instance_id,
                    "reason": d.reason.value,
                    "cluster": d.cluster,
                    "lifecycle_hook": "left to its owner" if event.lifecycle and not d.owned else None,
                },
            )
    return [a.to_dict() for a in assessments]


# ---- per instance ------------------------------------------------------------------------------------------------
def _instance_branch(ctx: DurableContext, item: dict[str, Any], index: int, items: Any) -> dict[str, Any]:
    event = Interruption.from_dict(item["event"])
    assessment = Assessment.from_dict(item["assessment"])
    d = assessment.decision
    # map branches run in threads: per-thread keys, or one instance's keys would land on another's lines
    logger.thread_safe_clear_keys()
    logger.thread_safe_append_keys(instance_id=d.instance_id, cluster=d.cluster)
    if event.kind == "asg-launch":
        return _launch_workflow(ctx, event, assessment)
    return _drain_workflow(ctx, event, assessment, item["run_id"])


def _drain_workflow(ctx: DurableContext, event: Interruption, assessment: Assessment, run_id: str) -> dict[str, Any]:
    ws = _wsettings()
    loc = ctx.step(_locate_step(event, assessment), name="locate")
    decision = Decision.from_dict(loc["decision"])
    deadline: float | None = loc["deadline"]
    summary: dict[str, Any] = {
        "instance_id": decision.instance_id,
        "cluster": decision.cluster,
        "node": decision.node,
        "decision": decision.reason.value,
        "action": decision.action,
    }
    if decision.action == "complete-lifecycle":  # owned but no node: nothing to drain, let the ASG go on
        summary["lifecycle"] = ctx.step(
            _complete_step(event, decision, "CONTINUE", "no node to drain"), name="complete-lifecycle"
        )
        return summary
    if decision.action == "skip" or decision.node is None:
        return summary
    node = decision.node
    logger.thread_safe_append_keys(node=node)
    if event.kind == "scheduled-change" and event.window_start is not None:
        start_at = event.window_start - ws.scheduled_change_lead
        if start_at - loc["now"] >= 1:
            ctx.wait(Duration.from_seconds(start_at - loc["now"]), name="until-window")
    started = ctx.step(_cordon_step(event, decision, deadline, run_id), name="cordon")
    summary["cordoned"] = started["cordoned"]
    if started.get("gone"):
        summary["result"] = "node-gone"
        return _finish(
            ctx, event, decision, summary, drained=True, report=None, started_at=started["now"], run_id=run_id
        )
    if decision.action == "cordon":
        summary["result"] = "cordoned"
        return summary
    hb = loc.get("heartbeat_interval")
    last_hb = started["now"]
    recheck = ws.recheck_min_seconds
    report: dict[str, Any] | None = None
    n = 0
    while True:
        out = ctx.step(_pass_step(event, decision, deadline, n), name=f"drain-pass-{n}")
        report = _merge(report, out["report"])
        now = out["now"]
        if out.get("gone") or report["drained"] or report["refused"] or (deadline is not None and now >= deadline):
            break
        if ws.dry_run:  # one pass says what a drain would do; nothing changes, so more passes would only repeat it
            break
        if hb and event.lifecycle is not None and now - last_hb >= hb:
            beat = ctx.step(_heartbeat_step(event, decision), name=f"heartbeat-{n}")
            last_hb = beat["now"]
            if beat["outcome"] == "already-done":
                hb = None  # the action is no longer active: completed elsewhere or timed out
        wait_s = recheck
        if deadline is not None:
            wait_s = min(wait_s, max(1, int(deadline - now)))
        if hb:
            wait_s = min(wait_s, max(1, int(hb / 2)))
        ctx.wait(Duration.from_seconds(max(1, wait_s)), name=f"recheck-{n}")
        recheck = min(ws.recheck_max_seconds, recheck * 2)
        n += 1
    drained = bool(report["drained"] or out.get("gone"))
    summary["report"] = _summary_of(report)
    summary["result"] = "drained" if drained else ("refused" if report["refused"] else "deadline-missed")
    return _finish(
        ctx, event, decision, summary, drained=drained, report=report, started_at=started["now"], run_id=run_id
    )


def _finish(
    ctx: DurableContext,
    event: Interruption,
    decision: Decision,
    summary: dict[str, Any],
    *,
    drained: bool,
    report: dict[str, Any] | None,
    started_at: float,
    run_id: str,
) -> dict[str, Any]:
    ws = _wsettings()
    fin = ctx.step(_report_step(event, decision, drained, report, started_at, run_id), name="report")
    summary["duration_seconds"] = fin["duration"]
    summary["notified"] = fin["notified"]
    if event.lifecycle is not None and event.kind == "asg-terminate":
        result = "CONTINUE" if drained else ws.lifecycle_result_on_failure
        summary["lifecycle"] = ctx.step(
            _complete_step(event, decision, result, summary.get("result", "")), name="complete-lifecycle"
        )
    return summary


def _launch_workflow(ctx: DurableContext, event: Interruption, assessment: Assessment) -> dict[str, Any]:
    ws = _wsettings()
    decision = assessment.decision
    summary: dict[str, Any] = {
        "instance_id": decision.instance_id,
        "cluster": decision.cluster,
        "decision": decision.reason.value,
        "action": decision.action,
    }
    if decision.action == "complete-lifecycle":  # launching into the warm pool: it will not join now
        summary["lifecycle"] = ctx.step(
            _complete_step(event, decision, "CONTINUE", "warm pool"), name="complete-lifecycle"
        )
        return summary
    first = ctx.step(_ready_step(event, assessment), name="ready-0")
    give_up_at = first["now"] + ws.launch_ready_timeout
    hb = first.get("heartbeat_interval")
    last_hb = first["now"]
    check, n = first, 0
    while not check["ready"] and check["now"] < give_up_at:
        if hb and check["now"] - last_hb >= hb:
            last_hb = ctx.step(_heartbeat_step(event, decision), name=f"heartbeat-{n}")["now"]
        ctx.wait(Duration.from_seconds(min(10, max(1, int(give_up_at - check["now"])))), name=f"recheck-{n}")
        n += 1
        check = ctx.step(_ready_step(event, assessment), name=f"ready-{n}")
    summary["node"] = check.get("node")
    summary["result"] = "ready" if check["ready"] else "timed-out"
    result = "CONTINUE" if check["ready"] else ws.launch_timeout_result
    summary["lifecycle"] = ctx.step(
        _complete_step(event, decision, result, summary["result"]), name="complete-lifecycle"
    )
    return summary


# ---- per-instance steps ------------------------------------------------------------------------------------------
@durable_step
@_errors_counted("locate")
def _locate_step(step_ctx: StepContext, event: Interruption, assessment: Assessment) -> dict[str, Any]:
    from kubernetes import client as k8s  # noqa: PLC0415 - only owned instances reach this

    from drain_orchestrator.aws.autoscaling import describe_hook  # noqa: PLC0415
    from drain_orchestrator.decide import locate_node  # noqa: PLC0415

    ws = _wsettings()
    d = assessment.decision
    assert d.cluster is not None  # owned decisions name their cluster
    core = k8s.CoreV1Api(_client("connector").api_client(d.cluster))
    decision = locate_node(core, assessment, event)
    deadline = _deadline(event, ws)
    heartbeat_interval = None
    if event.lifecycle is not None:
        deadline = with_hook_deadline(event, _client("autoscaling")).deadline or deadline
        if ws.deadline_asg_terminate is not None:
            deadline = min(deadline, event.event_time + ws.deadline_asg_terminate)
        hook = describe_hook(_client("autoscaling"), event.lifecycle.asg_name, event.lifecycle.hook_name)
        if hook is not None:
            # heartbeat at half the hook's timeout: one lost heartbeat still leaves time for the next
            heartbeat_interval = max(15, hook.heartbeat_timeout // 2)
    logger.info(
        "node located" if decision.node else "no node for instance",
        extra={"instance_id": d.instance_id, "node": decision.node, "reason": decision.reason.value},
    )
    if decision.reason is Reason.NO_NODE:
        metric("EventsIgnored", reason=Reason.NO_NODE.value, kind=event.kind)
    return {
        "decision": decision.to_dict(),
        "deadline": deadline,
        "heartbeat_interval": heartbeat_interval,
        "now": time.time(),
    }


def _deadline(event: Interruption, ws: WorkflowSettings) -> float:
    if event.kind == "state-change":
        return event.event_time + ws.deadline_state_change
    if event.kind == "rebalance" or event.deadline is None:
        # a drain always ends: one whose event names no deadline gets the rebalance budget
        return event.event_time + ws.deadline_rebalance
    return event.deadline


def _options(event: Interruption, decision: Decision, deadline: float | None) -> Any:
    from drain_orchestrator.drain.options import DrainOptions  # noqa: PLC0415

    ws = _wsettings()
    return DrainOptions(
        grace_period=ws.grace_period,
        delete_emptydir_data=ws.delete_emptydir_data,
        force=ws.force,
        evict_daemonsets=ws.evict_daemonsets,
        skip_wait_for_delete_timeout=float(ws.skip_wait_for_delete_timeout),
        deadline=deadline,
        force_delete_on_deadline=ws.force_delete_on_deadline,
        dry_run=ws.dry_run,
        reason=event.kind,
        event_id=event.event_id,
        taint_key=ws.taint[0] if ws.taint else None,
        taint_effect=ws.taint[1] if ws.taint else "NoSchedule",
        exclude_from_load_balancers=ws.exclude_from_load_balancers,
    )


@durable_step
@_errors_counted("cordon")
def _cordon_step(
    step_ctx: StepContext, event: Interruption, decision: Decision, deadline: float | None, run_id: str
) -> dict[str, Any]:
    from drain_orchestrator.kube.cordon import CordonError, cordon  # noqa: PLC0415
    from drain_orchestrator.kube.node_records import NodeGone, claim, node_event  # noqa: PLC0415

    ws = _wsettings()
    assert decision.cluster is not None and decision.node is not None
    kube, node, now = _kube(decision.cluster), decision.node, time.time()
    opts = _options(event, decision, deadline)
    try:
        res = cordon(
            kube,
            node,
            reason=opts.reason,
            event_id=opts.event_id,
            deadline=deadline,
            taint=opts.drain_taint,
            exclude_from_load_balancers=opts.exclude_from_load_balancers,
            now=now,
            dry_run=opts.dry_run,
        )
        # one execution announces each phase, however many events arrived for this node
        cordon_claimed = claim(kube, node, "cordoned", run_id, dry_run=ws.dry_run)
        # only a drain announces itself: a cordon-only run (rebalance) must not take the "started" claim
        first = decision.action == "drain" and claim(kube, node, "drain-started", run_id, dry_run=ws.dry_run)
    except (NodeGone, CordonError) as exc:
        if isinstance(exc, NodeGone) or "404" in str(exc):
            logger.info("node already gone", extra={"node": node})
            return {"cordoned": False, "gone": True, "now": now, "first": False}
        raise
    if cordon_claimed:
        metric("NodesCordoned", cluster=decision.cluster, kind=event.kind)
        node_event(
            kube, node, "NodeCordoned", f"cordoned for {event.kind} (event {event.event_id})", dry_run=ws.dry_run
        )
    if first and decision.action == "drain":
        node_event(
            kube,
            node,
            "DrainStarted",
            f"draining for {event.kind}, deadline {_iso(deadline)} (event {event.event_id})",
            dry_run=ws.dry_run,
        )
        _notify("started", event, decision, {"deadline": deadline})
    logger.info("node cordoned" if res.changed else "node already cordoned", extra={"node": node})
    _fault("after-cordon")
    return {"cordoned": True, "changed": res.changed, "first": first, "now": now}


@durable_step
@_errors_counted("drain-pass")
def _pass_step(
    step_ctx: StepContext, event: Interruption, decision: Decision, deadline: float | None, n: int
) -> dict[str, Any]:
    from drain_orchestrator.drain.report import DrainReport  # noqa: PLC0415
    from drain_orchestrator.kube.cordon import CordonError  # noqa: PLC0415
    from drain_orchestrator.kube.drainer import drain_node  # noqa: PLC0415

    ws = _wsettings()
    assert decision.cluster is not None and decision.node is not None
    kube = _kube(decision.cluster)
    _fault(f"pass-{n}")
    budget = float(ws.drain_pass_seconds)
    if deadline is not None:
        budget = max(1.0, min(budget, deadline - time.time()))
    try:
        rep = drain_node(kube, decision.node, _options(event, decision, deadline), timeout=budget)
    except CordonError as exc:
        if ": 404 " not in str(exc):
            raise
        # the node object is gone (instance terminated, node deleted): nothing left to drain
        logger.info("node gone while draining", extra={"node": decision.node})
        return {"report": DrainReport(node=decision.node, drained=True).to_dict(), "now": time.time(), "gone": True}
    gone = False
    if rep.evicted:
        metric("PodsEvicted", len(rep.evicted), cluster=decision.cluster, kind=event.kind)
    if rep.blocked:
        metric("EvictionsBlockedByPDB", len(rep.blocked), cluster=decision.cluster, kind=event.kind)
    if rep.forced:
        metric("PodsForceDeleted", len(rep.forced), cluster=decision.cluster, kind=event.kind)
    logger.info(
        "drain pass",
        extra={
            "pass": n,
            "evicted": len(rep.evicted),
            "blocked": [b.pod for b in rep.blocked],
            "forced": [f.pod for f in rep.forced],
            "remaining": len(rep.remaining),
            "drained": rep.drained,
            "api_calls": rep.api_calls,
        },
    )
    return {"report": rep.to_dict(), "now": time.time(), "gone": gone}


@durable_step
@_errors_counted("heartbeat")
def _heartbeat_step(step_ctx: StepContext, event: Interruption, decision: Decision) -> dict[str, Any]:
    from drain_orchestrator.aws.autoscaling import record_heartbeat  # noqa: PLC0415

    ref = event.lifecycle
    assert ref is not None
    if _wsettings().dry_run:
        return {"outcome": "dry-run", "now": time.time()}
    outcome = record_heartbeat(
        _client("autoscaling"), ref.asg_name, ref.hook_name, token=ref.token, instance_id=decision.instance_id
    )
    logger.info("lifecycle heartbeat", extra={"outcome": outcome})
    return {"outcome": outcome, "now": time.time()}


@durable_step
@_errors_counted("report")
def _report_step(
    step_ctx: StepContext,
    event: Interruption,
    decision: Decision,
    drained: bool,
    report: dict[str, Any] | None,
    started_at: float,
    run_id: str,
) -> dict[str, Any]:
    from drain_orchestrator.kube.node_records import NodeGone, claim, node_event  # noqa: PLC0415

    ws = _wsettings()
    assert decision.cluster is not None and decision.node is not None
    now = time.time()
    duration = round(now - started_at, 3)
    phase = "drain-completed" if drained else "drain-failed"
    try:
        first = claim(_kube(decision.cluster), decision.node, phase, run_id, dry_run=ws.dry_run)
    except NodeGone:
        first = False
    if drained:
        metric("NodesDrained", cluster=decision.cluster, kind=event.kind)
        metric("DrainDurationSeconds", duration, SECONDS, cluster=decision.cluster, kind=event.kind)
    else:
        metric("DrainDeadlineMissed", cluster=decision.cluster, kind=event.kind)
        logger.warning("drain did not finish", extra={"report": _summary_of(report)})
    if first:
        node_event(
            _kube(decision.cluster),
            decision.node,
            "DrainCompleted" if drained else "DrainFailed",
            f"{'drained' if drained else 'not drained'} after {duration:.0f} s (event {event.event_id})",
            event_type="Normal" if drained else "Warning",
            dry_run=ws.dry_run,
        )
        _notify(
            "completed" if drained else "failed",
            event,
            decision,
            {"duration_seconds": duration, "report": _summary_of(report)},
        )
    return {"duration": duration, "notified": first, "now": now}


@durable_step
@_errors_counted("complete-lifecycle")
def _complete_step(
    step_ctx: StepContext, event: Interruption, decision: Decision, result: str, why: str
) -> dict[str, Any]:
    from drain_orchestrator.aws.autoscaling import complete_lifecycle_action  # noqa: PLC0415

    ref = event.lifecycle
    if ref is None:
        return {"outcome": "not-applicable"}
    if _wsettings().dry_run:
        return {"outcome": "dry-run", "result": result}
    outcome = complete_lifecycle_action(
        _client("autoscaling"),
        ref.asg_name,
        ref.hook_name,
        result,  # type: ignore[arg-type]
        token=ref.token,
        instance_id=decision.instance_id,
    )
    if outcome == "completed":
        metric("LifecycleActionsCompleted", cluster=decision.cluster, kind=event.kind)
    logger.info(
        "lifecycle action",
        extra={"outcome": outcome, "result": result, "why": why, "asg": ref.asg_name, "hook": ref.hook_name},
    )
    return {"outcome": outcome, "result": result}


@durable_step
@_errors_counted("ready")
def _ready_step(step_ctx: StepContext, event: Interruption, assessment: Assessment) -> dict[str, Any]:
    from kubernetes import client as k8s  # noqa: PLC0415

    from drain_orchestrator.aws.autoscaling import describe_hook  # noqa: PLC0415
    from drain_orchestrator.decide import locate_node  # noqa: PLC0415

    d = assessment.decision
    assert d.cluster is not None
    core = k8s.CoreV1Api(_client("connector").api_client(d.cluster))
    found = locate_node(core, assessment, event)
    ready = False
    if found.node:
        node = core.read_node(found.node)
        conditions = (node.status.conditions if node.status else None) or []
        ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    hb = None
    if event.lifecycle is not None:
        hook = describe_hook(_client("autoscaling"), event.lifecycle.asg_name, event.lifecycle.hook_name)
        hb = max(15, hook.heartbeat_timeout // 2) if hook else None
    return {"node": found.node, "ready": ready, "now": time.time(), "heartbeat_interval": hb}


# ---- helpers -----------------------------------------------------------------------------------------------------
def _notify(phase: str, event: Interruption, decision: Decision, extra: dict[str, Any]) -> None:
    topic = load_config().settings.notification_topic_arn
    if not topic or _wsettings().dry_run:
        return
    from drain_orchestrator.aws.sns import publish  # noqa: PLC0415

    message = {
        "phase": phase,
        "cluster": decision.cluster,
        "node": decision.node,
        "instance_id": decision.instance_id,
        "kind": event.kind,
        "event_id": event.event_id,
        **extra,
    }
    publish(_client("sns"), topic, f"drain {phase}: {decision.node} ({decision.cluster})", message)


def _merge(total: dict[str, Any] | None, later: dict[str, Any]) -> dict[str, Any]:
    from drain_orchestrator.drain.report import DrainReport  # noqa: PLC0415

    if total is None:
        return later
    merged = DrainReport.from_dict(total)
    merged.absorb(DrainReport.from_dict(later))
    return merged.to_dict()


def _summary_of(report: dict[str, Any] | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "evicted": len(report["evicted"]),
        "blocked": sorted({b["pod"] for b in report["blocked"]}),
        "blocked_by": sorted({p for b in report["blocked"] for p in b["pdbs"]}),
        "forced": [f["pod"] for f in report["forced"]],
        "skipped": len(report["skipped"]),
        "refused": [r["pod"] for r in report["refused"]],
        "remaining": len(report["remaining"]),
        "api_calls": report["api_calls"],
        "passes": report["passes"],
    }


def _iso(epoch: float | None) -> str:
    if epoch is None:
        return "none"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))

"""The steps of one instance's drain: plan the clock, locate the node, cordon it, drain passes.

Each step is idempotent against the cluster and AWS (a crash mid-step repeats at most that step) and never raises:
a failure comes back as ``fault`` (step_guard.py) for the flow to retry or to end in the failure path. Steps that
may run long keep the lifecycle action alive from a thread (heartbeat.py).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import replace
from typing import Any

from aws_durable_execution_sdk_python import StepContext, durable_step

from drain_orchestrator import deadlines, pacing
from drain_orchestrator.decide import Assessment
from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.kube.errors import NodeGone, replacement_of
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.ownership import Reason
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.heartbeat import HeartbeatKeeper
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.results import Cordoned, DrainPlan, Located, PassOutcome
from drain_orchestrator.workflow.step_guard import fault_of


@durable_step
def plan_now_step(step_ctx: StepContext, event: Interruption, instance_id: str) -> DrainPlan:
    return plan_now(event, instance_id)


def plan_now(event: Interruption, instance_id: str) -> DrainPlan:
    """The drain's clock from what is true now (deadlines.drain_clock: a respectful minimum first, a lifecycle
    drain bounded by its action's own expiry). For a lifecycle action, also the hook's timeouts and one
    heartbeat: it proves the action still waits for this instance (AWS answers that it has no active action
    otherwise), restarts the hook's heartbeat timeout, and says at once when IAM will not let the function answer
    the hook. A hook that cannot be read or a heartbeat that fails for a while never stops the drain: the event's
    bound and a pace safe for any hook, and the flow's heartbeats go on. (Executions of earlier releases ran a
    "plan" step instead: the event's deadline, no respectful minimum, no proof.)"""
    from drain_orchestrator.aws.autoscaling import describe_hook  # noqa: PLC0415

    ws = runtime.wsettings()
    now = time.time()
    ref = event.lifecycle
    action: deadlines.ActionLife | None = None
    interval = timeout = None
    proof: str | None = None
    last_beat: float | None = None
    if ref is not None:
        interval = deadlines.heartbeat_interval(None)
        try:
            hook = describe_hook(runtime.autoscaling(), ref.asg_name, ref.hook_name)
        except ApiError as exc:
            fault_of("plan", exc)
            hook = None
        if hook is not None:
            timeout, interval = hook.heartbeat_timeout, deadlines.heartbeat_interval(hook.heartbeat_timeout)
            action = deadlines.ActionLife.seen(hook.heartbeat_timeout, hook.global_timeout, event.event_time, now)
        if not ws.dry_run:
            proof, last_beat = _prove(event, instance_id)
    clock = deadlines.drain_clock(event, ws, now, action)
    if proof == "already-done":  # answered since the decision (by someone else, or timed out): not acted on
        metric("EventsIgnored", reason=Reason.ACTION_NOT_PENDING.value, kind=event.kind)
    logger.info(
        "drain planned",
        extra={
            "deadline": clock.deadline,
            "respect_until": clock.respect_until,
            "action_expiry": clock.expiry,
            "event_age_seconds": round(now - event.event_time, 1),
            "lifecycle_proof": proof,
        },
    )
    return DrainPlan(
        deadline=clock.deadline,
        completion_deadline=clock.completion_deadline,
        heartbeat_interval=interval,
        now=time.time(),
        respect_until=clock.respect_until,
        heartbeat_timeout=timeout,
        expiry=clock.expiry,
        proof=proof,
        last_beat=last_beat,
    )


def _prove(event: Interruption, instance_id: str) -> tuple[str, float | None]:
    """One heartbeat for the event's action: (outcome, when recorded)."""
    from drain_orchestrator.workflow.heartbeat import beat, denied  # noqa: PLC0415

    assert event.lifecycle is not None
    try:
        outcome = beat(event.lifecycle, instance_id)
    except ApiError as exc:
        if exc.kind is FailureKind.FORBIDDEN:
            denied(event, exc)
            return "denied", None
        fault_of("heartbeat", exc)
        return "failed", None
    return outcome, time.time() if outcome == "recorded" else None


@durable_step
def locate_step(step_ctx: StepContext, job: DrainJob, assessment: Assessment, last_beat: float | None) -> Located:
    return locate(job, assessment, last_beat)


def locate(job: DrainJob, assessment: Assessment, last_beat: float | None) -> Located:
    from drain_orchestrator.decide import locate_node  # noqa: PLC0415 - only owned instances reach this
    from drain_orchestrator.kube.node_lookup import identity_of  # noqa: PLC0415

    event = job.event
    identity = None
    with HeartbeatKeeper.of(job, last_beat) as hb:
        try:
            decision = locate_node(runtime.kube(job.cluster), assessment, event)
            if decision.node is not None:  # the Node object found: every later step acts on it alone
                with contextlib.suppress(NodeGone):  # gone since: the cordon says so (node-gone), not a failure
                    identity = identity_of(runtime.kube(job.cluster), decision.node)
        except Exception as exc:
            return Located(job.decision, time.time(), hb.last_beat, hb.hook_done, fault_of("locate", exc))
    logger.info(
        "node located" if decision.node else "no node for instance",
        extra={"instance_id": decision.instance_id, "node": decision.node, "reason": decision.reason.value},
    )
    if decision.reason is Reason.NO_NODE:
        metric("EventsIgnored", reason=Reason.NO_NODE.value, kind=event.kind)
    return Located(decision, time.time(), hb.last_beat, hb.hook_done, identity=identity)


@durable_step
def cordon_step(step_ctx: StepContext, job: DrainJob, last_beat: float | None) -> Cordoned:
    return cordon_node(job, last_beat)


def cordon_node(job: DrainJob, last_beat: float | None) -> Cordoned:
    from drain_orchestrator.drain_claim import Ask  # noqa: PLC0415
    from drain_orchestrator.kube.cordon import cordon  # noqa: PLC0415
    from drain_orchestrator.workflow.claim_steps import check_of, ttl  # noqa: PLC0415

    decision, node, now = job.decision, job.node, time.time()
    # a drain takes (or joins) the node's drain claim in the cordon's write: one PATCH less (one_drain.py)
    drains = decision.action == "drain" and not runtime.wsettings().dry_run
    ask = Ask(job.run_id, job.plan.deadline, now, ttl()) if drains else None
    with HeartbeatKeeper.of(job, last_beat) as hb:
        try:
            kube = runtime.kube(job.cluster)
            opts = job.drain_options()
            res = cordon(
                kube,
                node,
                reason=opts.reason,
                event_id=opts.event_id,
                deadline=job.plan.deadline,
                taint=opts.drain_taint,
                exclude_from_load_balancers=opts.exclude_from_load_balancers,
                now=now,
                dry_run=opts.dry_run,
                # one execution announces each phase, however many events arrived for this node (claims taken in
                # the cordon's write); the announcement follows the cordon's write (report_step.announce), in
                # the same step or one of its own. Only a drain announces itself: a cordon-only run (rebalance)
                # must not take the "started" claim.
                claims=dict.fromkeys(
                    ("cordoned", "drain-started") if decision.action == "drain" else ("cordoned",), job.run_id
                ),
                drain_claim=ask,
                pin=job.pin,
                marks=_return_marks(job, now),
            )
            cordon_claimed = "cordoned" in res.claimed
            first = "drain-started" in res.claimed
        except NodeGone as exc:
            replaced = replacement_of(exc)
            logger.info("node already gone", extra={"node": node, "replaced_by": replaced and replaced.to_dict()})
            return Cordoned(now=now, gone=True, last_beat=hb.last_beat, hook_done=hb.hook_done, replaced_by=replaced)
        except Exception as exc:
            return Cordoned(now=now, last_beat=hb.last_beat, hook_done=hb.hook_done, fault=fault_of("cordon", exc))
    logger.info("node cordoned" if res.changed else "node already cordoned", extra={"node": node})
    runtime.inject_fault("after-cordon")
    claim = None if res.drain_claim is None else check_of(job, res.drain_claim, hb.last_beat, hb.hook_done)
    return Cordoned(
        now=now,
        cordoned=True,
        changed=res.changed,
        last_beat=hb.last_beat,
        hook_done=hb.hook_done,
        cordon_claimed=cordon_claimed,
        drain_claimed=bool(first),
        claim=claim,
    )


def _return_marks(job: DrainJob, now: float) -> Any:
    """The return mark's change in the cordon's write (returns.cordon_mark): this execution's when its instance may
    stay, removed when it goes away; None (left as it is) for a rebalance that never returns its node."""
    from drain_orchestrator.kube.return_marks import marks_for  # noqa: PLC0415
    from drain_orchestrator.returns import ReturnMark, event_key  # noqa: PLC0415
    from drain_orchestrator.workflow.return_flow import case_of  # noqa: PLC0415

    case = case_of(job)
    if case is None and job.event.kind == "rebalance":
        return None
    mine = None if case is None else ReturnMark(job.run_id, event_key(job.event), job.event.kind, now, case=case)
    return marks_for(mine)


FRESH_CLAIM_SECONDS = 30.0


def _just_claimed(job: DrainJob, n: int) -> bool:
    """The first pass right after the claim step took the claim (not a pass replayed long after) renews nothing:
    the claim is younger than a quarter of its time to live."""
    from drain_orchestrator.workflow.claim_steps import ttl  # noqa: PLC0415

    if n != 0 or job.claimed_at is None:
        return False
    return time.time() - job.claimed_at < min(FRESH_CLAIM_SECONDS, ttl() / 4)


@durable_step
def pass_step(
    step_ctx: StepContext,
    job: DrainJob,
    n: int,
    last_beat: float | None,
    after_held: bool = False,
    want_ips: bool = False,
    after_queued: bool = False,
    may_queue: bool = True,
) -> PassOutcome:
    """One drain pass of at most DRAIN_PASS_SECONDS; it ends early when every pod left is held (at its first look
    when the pass before ended held too, ``after_held``). ``want_ips``: say the pod IPs its LIST found, even if it
    fails after it (the load-balancer gate's ip targets: the pods are gone once drained). ``after_queued``: the pass
    before ended queued for a far turn; ``may_queue``: this one may (drain/turn_queue.py, workflow/hold_pace.py)."""
    from drain_orchestrator.engine.drainer import drain_node  # noqa: PLC0415
    from drain_orchestrator.engine.held_pass import HoldCheck  # noqa: PLC0415
    from drain_orchestrator.kube.node_claim import renew_claim  # noqa: PLC0415
    from drain_orchestrator.kube.node_lookup import identity_of  # noqa: PLC0415
    from drain_orchestrator.kube.pods import SeenIps  # noqa: PLC0415
    from drain_orchestrator.workflow.claim_steps import ttl  # noqa: PLC0415

    ws = runtime.wsettings()
    event = job.event
    runtime.inject_fault(f"pass-{n}")
    seen = SeenIps() if want_ips else None

    def ips() -> list[str] | None:
        return sorted(seen.ips) if seen is not None and seen.listed else None

    with HeartbeatKeeper.of(job, last_beat) as hb:
        try:
            deadline = job.plan.deadline
            if job.claimed and _just_claimed(job, n):  # the claim step wrote it moments ago: no renewal yet
                deadline = min(deadline, job.claim_earliest or deadline)
            elif job.claimed:  # renew the node's drain claim; drain to the earliest deadline of those waiting on it
                claim = renew_claim(runtime.kube(job.cluster), job.node, job.run_id, time.time(), ttl(), job.pin)
                if claim is None:
                    logger.warning("drain claim lost: another execution took it over", extra={"node": job.node})
                    return PassOutcome(now=time.time(), last_beat=hb.last_beat, hook_done=hb.hook_done, claim_lost=True)
                deadline = min(deadline, claim.earliest)
            now = time.time()
            respect_until = job.plan.respect_until
            budget = deadlines.pass_budget(now, deadline, ws, respect_until)
            opts = replace(job.drain_options(), deadline=deadline, after_queued=after_queued)
            if not may_queue:
                opts = replace(opts, queue_after=math.inf)
            if deadlines.in_respect_window(respect_until, now):  # kubectl's drain: no deadline policy yet
                opts = replace(opts, deadline=None, force_delete_on_deadline=opts.force_now)
            hold = HoldCheck(linger=pacing.HELD_LINGER_SECONDS, quick=after_held)
            kube = runtime.kube(job.cluster)
            gone0 = kube.versions_gone
            rep = drain_node(kube, job.node, opts, timeout=budget, hold=hold, seen_ips=seen)
            versions_gone = kube.versions_gone - gone0
            learned = None if job.identity is not None else identity_of(kube, job.node, job.pin)
        except NodeGone as exc:
            # the Node object is gone (instance terminated, node deleted, or another Node under its name): nothing
            # left to drain
            replaced = replacement_of(exc)
            gone = {"node": job.node, "replaced_by": replaced and replaced.to_dict()}
            logger.info("node gone while draining", extra=gone)
            return PassOutcome(
                now=time.time(),
                gone=True,
                last_beat=hb.last_beat,
                hook_done=hb.hook_done,
                pod_ips=ips(),
                replaced_by=replaced,
            )
        except Exception as exc:
            fault = fault_of("drain-pass", exc)
            return PassOutcome(
                now=time.time(), last_beat=hb.last_beat, hook_done=hb.hook_done, fault=fault, pod_ips=ips()
            )
    if rep.evicted and job.counts_pods:
        metric("PodsEvicted", len(rep.evicted), cluster=job.cluster, kind=event.kind)
    if rep.blocked:
        metric("EvictionsBlockedByPDB", len(rep.blocked), cluster=job.cluster, kind=event.kind)
    if rep.forced and job.counts_pods:
        metric("PodsForceDeleted", len(rep.forced), cluster=job.cluster, kind=event.kind)
    logger.info(
        "drain pass",
        extra={
            "pass": n,
            "evicted": len(rep.evicted),
            "blocked": [b.pod for b in rep.blocked],
            "forced": [f.pod for f in rep.forced],
            "remaining": len(rep.remaining),
            "held": [f"{h.pod}: {h.reason} ({h.status}) {', '.join(h.pdbs)} {h.message[:200]}" for h in rep.held[:20]],
            "drained": rep.drained,
            "api_calls": rep.api_calls,
            # watches answered 410 (their version gone), each followed by a fresh read: a re-list loop shows here
            "versions_gone": versions_gone,
            "seconds": round(rep.elapsed, 2),
            "held_early": hold.ended,
            "queued": hold.queued,
            **({"queue": hold.queue_look.to_log()} if hold.queued and hold.queue_look is not None else {}),
        },
    )
    return PassOutcome(
        now=time.time(),
        report=rep,
        last_beat=hb.last_beat,
        hook_done=hb.hook_done,
        deadline=deadline,
        held=hold.ended,
        queued=hold.queued,
        wake_at=hold.wake_at,
        pod_ips=ips(),
        identity=learned,
    )

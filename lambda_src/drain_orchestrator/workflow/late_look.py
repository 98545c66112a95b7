"""The late look: right before a drained instance may go, its node's pods are watched until LATE_LOOK_SECONDS after
the cordon, and a pod bound meanwhile is drained too and named.

The scheduler places pods from its own cache of the nodes, which sees a cordon a moment after it is written, and a
pod it placed before then is bound a moment later still. The drain's passes end once they listed the node after the
control plane was seen to have the cordon (its witness, engine/node_view.py): that LIST holds the pods placed before.
A binding already under way can land after it, and a pod that tolerates the unschedulable taint (or names the node
itself) can be bound at any time. So the window Karpenter keeps after a cordon (its minimum drain time) is spent here,
after the gates, where it usually costs nothing (a load balancer's deregistration delay, a volume's detach take
longer), and the node is listed once more whenever the window is over: a pod bound while the gates held is drained
before the instance goes. A drain without gates waits what is left of the window after it, off the drain's path.

    step "late-look"   the late look (engine/drainer.py look_late): a LIST, then the node's pods watched to the end of
                       the window; a pod found is drained (evicted, waited for) like in a pass
    [wait "late-look-wait-N" + step "late-look-N"]  while a late pod is still there (a budget refuses it)

A drain whose last LIST already did that work looks no more (``listed_late_enough``): one sent LATE_LOOK_SECONDS
after the cordon or later, no gate having held the instance since, and at most that old now. A drain that waited
for budgets or pods going (a storm's, most drains of many pods) ends so, and saves the look's requests and step.

A look that fails for good leaves the verdict as it was (the drain itself drained), its error in the summary.
"""

from __future__ import annotations

import time
from dataclasses import replace

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_step

from drain_orchestrator import pacing
from drain_orchestrator.kube.errors import NodeGone
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.outcome import InstanceOutcome, Result
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.heartbeat import HeartbeatKeeper
from drain_orchestrator.workflow.job import Drained, DrainJob
from drain_orchestrator.workflow.pace import Pace
from drain_orchestrator.workflow.results import PassOutcome
from drain_orchestrator.workflow.step_guard import fault_of


def listed_late_enough(listed_at: float | None, cordoned_at: float | None, now: float, *, gates_held: bool) -> bool:
    """The drain's last LIST (sent at ``listed_at``, epoch) stands for the late look: sent LATE_LOOK_SECONDS after
    the cordon or later, so the bindings under way when the scheduler saw the cordon had landed and it held them; and
    a look now would list what it listed: no gate held the instance since, and it is at most LATE_LOOK_SECONDS old."""
    from drain_orchestrator.drain.options import LATE_LOOK_SECONDS  # noqa: PLC0415

    if listed_at is None or cordoned_at is None or gates_held:
        return False
    return listed_at >= cordoned_at + LATE_LOOK_SECONDS and now - listed_at <= LATE_LOOK_SECONDS


def late_look(
    ctx: DurableContext, job: DrainJob, pace: Pace, summary: InstanceOutcome, drained: Drained, *, gates_held: bool
) -> Drained:
    """A drained node looked at late (see above); the verdict then: still drained, or what its late pods left."""
    ws = runtime.wsettings()
    deadline = job.plan.deadline
    report = drained.report
    listed_at = None if report is None else report.listed_at
    if listed_late_enough(listed_at, job.started_at, pace.now, gates_held=gates_held):
        return drained
    n = 0
    while True:
        name = "late-look" if n == 0 else f"late-look-{n}"
        out = pace.retrying(name, lambda lb: late_look_step(job, lb), PassOutcome, deadline)
        if out.fault is not None:
            summary.late_look = {"error": out.fault.to_dict()}
            return drained
        if out.gone or out.report is None:  # the node went: nothing more can be bound to it
            return drained
        rep = out.report
        report = rep if report is None else report.merged(rep)
        late = sorted(rep.removing())  # every one was bound after the cordon
        if late:
            summary.late_look = {"late_pods": sorted({*(summary.late_look or {}).get("late_pods", []), *late})}
        if rep.drained:
            return Drained(Result.DRAINED, report)
        if rep.refused:
            return Drained(Result.REFUSED, report)
        if pace.now >= deadline:
            return Drained(Result.DEADLINE_MISSED, report)
        # paced like a held drain's passes (what bounds its durable operations, pacing.py): a late pod that stays is
        # one a budget or a drain policy holds
        pace.wait(float(pacing.held_wait(n, ws)), f"late-look-wait-{n}", deadline)
        n += 1


@durable_step
def late_look_step(step_ctx: StepContext, job: DrainJob, last_beat: float | None) -> PassOutcome:
    """The late look, for at most DRAIN_PASS_SECONDS and never past the deadline."""
    from drain_orchestrator.drain.options import LATE_LOOK_SECONDS  # noqa: PLC0415
    from drain_orchestrator.engine.drainer import look_late  # noqa: PLC0415
    from drain_orchestrator.engine.held_pass import HoldCheck  # noqa: PLC0415

    ws = runtime.wsettings()
    with HeartbeatKeeper.of(job, last_beat) as hb:
        try:
            runtime.inject_fault("late-look")
            budget = pacing.pass_budget(time.time(), job.plan.deadline, ws)
            opts = replace(job.drain_options(), settle_seconds=LATE_LOOK_SECONDS)
            hold = HoldCheck(linger=pacing.HELD_LINGER_SECONDS)  # a late pod a budget holds: back to the flow
            rep = look_late(runtime.kube(job.cluster), job.node, opts, timeout=budget, hold=hold)
        except NodeGone:
            return PassOutcome(now=time.time(), gone=True, last_beat=hb.last_beat, hook_done=hb.hook_done)
        except Exception as exc:
            fault = fault_of("late-look", exc)
            return PassOutcome(now=time.time(), last_beat=hb.last_beat, hook_done=hb.hook_done, fault=fault)
    late = sorted(rep.removing())
    if rep.evicted and job.counts_pods:
        metric("PodsEvicted", len(rep.evicted), cluster=job.cluster, kind=job.event.kind)
    if rep.forced and job.counts_pods:
        metric("PodsForceDeleted", len(rep.forced), cluster=job.cluster, kind=job.event.kind)
    log = logger.warning if late else logger.info
    log(
        "late look",
        extra={
            "late_pods": late[:20],
            "drained": rep.drained,
            "api_calls": rep.api_calls,
            "seconds": round(rep.elapsed, 2),
        },
    )
    return PassOutcome(now=time.time(), report=rep, last_beat=hb.last_beat, hook_done=hb.hook_done)

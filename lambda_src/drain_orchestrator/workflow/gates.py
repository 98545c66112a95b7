"""Gates between the drain and the verdict: the instance goes only once nothing outside Kubernetes still needs it.

    [state-change "terminated", OUT_OF_SERVICE_TAINT] out-of-service taint on the leftover Node, once EC2 reports
    the instance stopped or terminated
    -> [load-balancer gate] the node's pod IPs (ip-mode targets): the first drain pass's LIST, or a LIST of their
       own before the drain in an execution that waits on another's drain
    -> drain passes (drain_flow)
    -> when drained (or the node is gone): checks separated by durable waits (heartbeats when due), until
       no target in scope is initial/healthy/unhealthy/draining and the node has no VolumeAttachment left,
       or the drain's deadline. Still holding at the deadline: result ``gate-held``, the reason named in the
       error (``gate: targets still draining: tg-x (i-...)``), the lifecycle action completed with
       LIFECYCLE_RESULT_ON_FAILURE.

The gates are objects (gate_defs.GATES): the configured ones run in one loop, each check a durable step of its own.
A gate that cannot check (ELBv2 AccessDenied, an unreachable API) is retried by its failure kind like any step;
when it gives up it stops holding, and its error is in the summary (counted as ``Errors``): a missing permission
must not keep every instance to its deadline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aws_durable_execution_sdk_python import DurableContext

from drain_orchestrator import deadlines
from drain_orchestrator.failures import RETRY_POLICIES, FailureKind
from drain_orchestrator.kinds import rule_of
from drain_orchestrator.outcome import InstanceOutcome, Result, succeeded
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.checkpoint import StepFault, step_config
from drain_orchestrator.workflow.gate_defs import GATES, Check, Gate, PodIps, Run, State, configured
from drain_orchestrator.workflow.gate_steps import out_of_service_ec2_step
from drain_orchestrator.workflow.held import HeldNotice, HeldWatch, gate_held, held_step
from drain_orchestrator.workflow.job import Drained, DrainJob
from drain_orchestrator.workflow.pace import Pace
from drain_orchestrator.workflow.results import Tainted


@dataclass
class _Gate:
    """One gate's progress across checks (rebuilt identically on replay from the checks' checkpoints)."""

    on: bool
    holding: list[str] = field(default_factory=list)
    held: set[str] = field(default_factory=set)
    faults: int = 0
    error: StepFault | None = None
    done_at: float | None = None

    def absorb(self, check: Check, now: float, deadline: float) -> None:
        """Failed: retried by its failure kind until it gives up (then it stops holding); held / clear: noted."""
        if check.state is State.FAILED:
            assert check.fault is not None
            if RETRY_POLICIES[FailureKind(check.fault.kind)].gives_up_after(self.faults) or now >= deadline:
                self.on, self.error = False, check.fault
            self.faults += 1
            return
        self.faults, self.holding = 0, check.holding
        self.held.update(check.holding)
        if check.state is State.CLEAR:
            self.on, self.done_at = False, now

    def summary(self, start: float, now: float, still: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "held": sorted(self.held),
            "waited_seconds": round((self.done_at or now) - start, 1) if self.held else 0.0,
            still: self.holding if self.on else [],
        }
        if self.error is not None:
            out["error"] = self.error.to_dict()
        return out


class Gates:
    """The configured gates of one drain: started before it (``__init__``: the out-of-service taint, each gate's
    start; the load-balancer gate records the pod IPs the drain's passes find in ``ips``), then held after it until
    nothing holds or the deadline (``after``)."""

    def __init__(self, ctx: DurableContext, job: DrainJob, pace: Pace, summary: InstanceOutcome) -> None:
        self.ctx, self.job, self.pace, self.summary = ctx, job, pace, summary
        ws = runtime.wsettings()
        lifecycle = job.event.lifecycle is not None and rule_of(job.event.kind).lifecycle
        self.on = [g for g in GATES if configured(g, ws, lifecycle)]
        if ws.out_of_service_taint and job.event.kind == "state-change" and job.event.state == "terminated":
            tainted: Tainted = ctx.step(
                out_of_service_ec2_step(job), name="out-of-service-ec2", config=step_config(Tainted)
            )
            pace.absorb(tainted)
            summary.out_of_service = tainted.tainted
        self.ips = PodIps()
        self.runs = [(g, g.start(ctx, job, pace, self.ips)) for g in self.on]
        self.held = False  # a gate held the instance after the drain (``after``): pods may have been bound meanwhile

    def after(self, drained: Drained) -> Drained:
        """The drain's end as the gates leave it: unchanged when it did not succeed or no gate is on; else
        ``gate-held`` with the reason when a gate still holds at the deadline."""
        result, report, _ = drained
        if not succeeded(result) or not self.on or self.pace.unkept:  # an action no one can answer is held by nothing
            return drained
        runs = [(g, run) for g, run in self.runs if g.after(result)]
        gates, reason = _hold(self.ctx, self.job, self.pace, runs)
        self.summary.gates = gates
        self.held = any(g.get("held") for g in gates.values() if isinstance(g, dict))
        if reason is not None:
            return Drained(Result.GATE_HELD, report, StepFault(step="gate", kind="deadline", message=reason))
        return drained


def _hold(
    ctx: DurableContext, job: DrainJob, pace: Pace, runs: list[tuple[Gate, Run]]
) -> tuple[dict[str, Any], str | None]:
    """Check every gate that still holds, durable waits in between, until none holds or the deadline."""
    ws = runtime.wsettings()
    deadline, start = job.plan.deadline, pace.now
    progress = [_Gate(on=True) for _ in runs]
    n = 0
    watch = HeldWatch(ws.held_notify_seconds)  # a gate holding past HELD_NOTIFY_SECONDS is said, like a PDB
    while True:
        for (_gate, run), p in zip(runs, progress, strict=True):
            if p.on:
                check = run.check(ctx, pace, n, start)
                p.absorb(check, pace.now, deadline)
        holding = [h for p in progress if p.on for h in p.holding]
        if watch.holding(bool(holding), pace.now) and watch.since is not None:
            held = gate_held(job, holding, watch.since, pace.now, deadline)
            said: HeldNotice = ctx.step(held_step(job, held, None), name="gate-held", config=step_config(HeldNotice))
            pace.absorb(said)
        if not any(p.on for p in progress) or pace.now >= deadline:
            break
        pace.wait(deadlines.gate_recheck_delay(n, ws), f"gate-wait-{n}", deadline)
        n += 1
    out: dict[str, Any] = {}
    reasons = []
    for (gate, run), p in zip(runs, progress, strict=True):
        out[gate.key] = {**p.summary(start, pace.now, gate.still), **run.summary()}
        if p.on:
            reasons.append(f"{gate.holds_as}: {', '.join(p.holding)}")
    reason = f"gate: {'; '.join(reasons)}" if reasons else None
    if reason is not None:
        out["reason"] = reason
    return out, reason

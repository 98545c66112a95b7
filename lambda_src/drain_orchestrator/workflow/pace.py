"""The flow's clock and heartbeat, fed by step results: orchestration code never reads the clock itself.

On replay the flow re-runs from the top and every step returns its checkpoint, so all decisions taken here
(how long to wait, whether a heartbeat is due, whether to retry) come out the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_durable_execution_sdk_python import DurableContext
from aws_durable_execution_sdk_python.config import Duration

from drain_orchestrator import deadlines
from drain_orchestrator.failures import RETRY_POLICIES, FailureKind
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.checkpoint import R, StepFault, step_config
from drain_orchestrator.workflow.lifecycle_steps import complete_step, heartbeat_step
from drain_orchestrator.workflow.results import BeatOutcome, Completion, DrainPlan

if TYPE_CHECKING:
    from drain_orchestrator.workflow.job import DrainJob


class Pace:
    def __init__(
        self,
        ctx: DurableContext,
        event: Interruption,
        instance_id: str,
        *,
        now: float,
        interval: int | None,
        dry_run: bool,
        heartbeat_timeout: int | None = None,
    ) -> None:
        self.ctx, self.event, self.instance_id = ctx, event, instance_id
        self.now = now
        self.started = now  # the drain's plan: a retry's spacing spreads a fault over the drain's life from here
        self.interval = interval if event.lifecycle is not None and not dry_run else None
        # the action's heartbeat clock started when the hook fired, not when this execution began
        self.last_beat: float | None = event.event_time if self.interval else None
        self.beat_retry_at: float | None = None
        self.beat_failures = 0  # failed heartbeats in a row: their retries back off (deadlines.beat_retry_delay)
        self.hook_done = False
        self.heartbeat_timeout = heartbeat_timeout
        # the action can no longer be kept: IAM denies its heartbeats, or its group was deleted (when seen)
        self.hook_denied = False
        self.group_gone_at: float | None = None
        self.beats = 0

    def proved(self, plan: DrainPlan) -> None:
        """What the plan's heartbeat said about the lifecycle action ("plan-now" step)."""
        self.absorb(plan)
        self.answered(plan.proof, plan.now)

    def answered(self, outcome: str | None, now: float) -> None:
        if outcome == "already-done":
            self.hook_done = True  # completed by someone else or timed out: nothing left to keep alive
        elif outcome == "denied":
            self.hook_denied = True
        elif outcome == "group-gone" and self.group_gone_at is None:
            self.group_gone_at = now

    @property
    def unkept(self) -> bool:
        """The lifecycle action can no longer be kept alive: IAM denies its heartbeats, or its group is gone."""
        return self.hook_denied or self.group_gone_at is not None

    def bound(self, deadline: float) -> float:
        """The drain's deadline once the action can no longer be kept (deadlines.bounded_by_action)."""
        if not self.unkept:
            return deadline
        lapses = None
        if self.hook_denied:
            timeout = self.heartbeat_timeout or deadlines.MIN_HEARTBEAT_TIMEOUT
            lapses = (self.last_beat or self.event.event_time) + timeout
        ws = runtime.wsettings()
        return deadlines.bounded_by_action(deadline, ws, lapses=lapses, gone_at=self.group_gone_at)

    def absorb(self, result: Any) -> None:
        """The flow's clock and heartbeat state from a step's result. A step that beats (HeartbeatKeeper) returns
        ``last_beat`` and ``hook_done`` as fields of its own result (Located, ClaimCheck, Cordoned, PassOutcome,
        ReadyCheck), read here by name. Those results are checkpointed, and what a step returns under its name is a
        contract with running executions, so the pair stays in each of them rather than moving into one nested part
        (docs/architecture.md: the heartbeat's state rides on the step results)."""
        self.now = max(self.now, result.now)
        last = getattr(result, "last_beat", None)
        if last is not None and (self.last_beat is None or last > self.last_beat):
            self.last_beat = last
        self.hook_done = self.hook_done or bool(getattr(result, "hook_done", False))

    def next_beat(self) -> float | None:
        if self.interval is None or self.hook_done or self.unkept or self.last_beat is None:
            return None
        due = self.last_beat + self.interval
        return max(due, self.beat_retry_at) if self.beat_retry_at is not None else due

    def wait(self, want: float, name: str, until: float) -> None:
        """A durable wait (no compute billed) of ``want`` seconds, ending by ``until`` and by the next heartbeat;
        the heartbeat follows when it is due."""
        seconds = deadlines.wait_seconds(self.now, want, until, self.next_beat())
        self.ctx.wait(Duration.from_seconds(seconds), name=name)
        self.now += seconds
        self.beat_if_due(name)

    def beat_if_due(self, name: str) -> None:
        due = self.next_beat()
        if due is None or self.now < due - 0.5:
            return
        assert self.event.lifecycle is not None
        res: BeatOutcome = self.ctx.step(
            heartbeat_step(self.event, self.instance_id), name=f"heartbeat-{name}", config=step_config(BeatOutcome)
        )
        self.now = max(self.now, res.now)
        self.beats += 1
        if res.fault is not None:
            lapses = (self.last_beat or self.event.event_time) + (self.heartbeat_timeout or 3 * (self.interval or 0))
            delay = deadlines.beat_retry_delay(self.beat_failures, self.interval, res.now, lapses)
            self.beat_retry_at = res.now + delay
            self.beat_failures += 1
        elif res.outcome == "recorded":
            self.last_beat, self.beat_retry_at, self.beat_failures = res.now, None, 0
        else:
            self.answered(res.outcome, res.now)

    def spacing(self, until: float, steps: int = 1) -> int:
        """The least wait between two retries of a long fault in a loop that may last until ``until``, of ``steps``
        steps a round (deadlines.loop_spacing: its retries fit the drain's durable operations)."""
        return deadlines.loop_spacing(until - self.started, steps)

    def retrying(self, name: str, make: Any, cls: type[R], until: float, first: R | None = None) -> R:
        """Run ``make(last_beat)`` as a step until it succeeds, its failure kind gives up, or ``until`` passes,
        with the failure kind's backoff as durable waits in between (never shorter than the drain's spacing once
        the fault is a long one: ``spacing``). Returns the last result (fault set if it
        never succeeded). ``first``: the first attempt's result, when a step of another name made it (the begin
        step's); the retries are "<name>-retry-N"."""
        attempt = 0
        while True:
            label = name if attempt == 0 else f"{name}-retry-{attempt}"
            if attempt == 0 and first is not None:
                res: R = first
            else:
                res = self.ctx.step(make(self.last_beat), name=label, config=step_config(cls))
            self.absorb(res)
            fault: StepFault | None = getattr(res, "fault", None)
            if fault is None:
                return res
            policy = RETRY_POLICIES[FailureKind(fault.kind)]
            if policy.gives_up_after(attempt) or self.now >= until:
                return res
            backoff = policy.jittered(attempt, f"{label}@{getattr(res, 'now', self.now)}", self.spacing(until))
            self.wait(backoff, f"{name}-backoff-{attempt}", until)
            attempt += 1


def complete_lifecycle(
    pace: Pace, job: DrainJob, result: str, why: str, first: Completion | None = None
) -> dict[str, Any]:
    """CompleteLifecycleAction, retried until the job's completion deadline; the outcome as summary data. Not
    tried once IAM denied the action's heartbeats or its group is gone (``answerable``): the answer is known.
    ``first``: the first attempt, when the verdict step made it (verdict.py)."""
    if pace.hook_denied:
        return {"outcome": "denied", "result": None}
    if pace.group_gone_at is not None:
        return {"outcome": "group-gone", "result": None}
    done = pace.retrying(
        "complete-lifecycle",
        lambda _lb: complete_step(job.event, job.decision, result, why),
        Completion,
        job.plan.completion_deadline,
        first,
    )
    return lifecycle_of(done)


def answerable(pace: Pace) -> bool:
    """Whether completing the lifecycle action is worth a call (complete_lifecycle tries it)."""
    return not pace.hook_denied and pace.group_gone_at is None


def lifecycle_of(done: Completion) -> dict[str, Any]:
    """A completion as the summary's ``lifecycle``: {outcome, result, error?}."""
    out: dict[str, Any] = {"outcome": done.outcome, "result": done.result}
    if done.fault is not None:
        out["error"] = done.fault.to_dict()
    return out

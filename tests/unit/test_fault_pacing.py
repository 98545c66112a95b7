"""A drain's fault paths stay under the durable-operation cap for its whole life (pure).

The flow's own pacing code — Pace's retries and heartbeats, the held waits, the approval's looks — runs here for
48 h of faults against a durable context reduced to a ledger: each step answers at once as the fault says, each
wait moves the ledger's clock, and both are counted as the service counts operations. The counts are held against
the cap and against the model (pacing.fault_paths) the settings check runs.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from drain_orchestrator import pacing
from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.failures import RETRY_POLICIES, FailureKind
from drain_orchestrator.interruption import Interruption, LifecycleRef
from drain_orchestrator.workflow.approval import Approval, Look
from drain_orchestrator.workflow.checkpoint import StepFault
from drain_orchestrator.workflow.held import HeldWatch
from drain_orchestrator.workflow.hold_pace import HoldPace, wait_held
from drain_orchestrator.workflow.pace import Pace
from drain_orchestrator.workflow.results import BeatOutcome, PassOutcome
from drain_orchestrator.workflow_settings import WorkflowSettings

T0 = 1_796_540_000.0
LIFE = 48 * 3600
HOOK = 1800  # a heartbeat timeout whose action lives the whole 48 h (100 x 1800 s > 48 h): beats every 600 s
WS = WorkflowSettings()
# what a drain may spend besides its loop: the steps outside it and the gates' fast checks (pacing.worst_case)
OUTSIDE = pacing.FIXED_OPERATIONS + 3 * pacing.GATE_FAST_CHECKS
MARGIN = 0.85  # a fault path of the whole life stays this far under the cap

Answer = Callable[[str, float], Any]


class Ledger:
    """A durable context for the pacing code: ``answer(name, now)`` is each step's result."""

    def __init__(self, answer: Answer) -> None:
        self.answer, self.now = answer, T0
        self.steps: list[str] = []
        self.waits = 0

    def step(self, _func: Any, name: str, config: Any = None) -> Any:
        self.steps.append(name)
        return self.answer(name, self.now)

    def wait(self, duration: Any, name: str) -> None:
        self.now += duration.to_seconds()
        self.waits += 1

    def create_callback(self, name: str, config: Any = None) -> Any:
        self.steps.append(name)
        return SimpleNamespace(callback_id="cb-1")

    @property
    def operations(self) -> int:
        return len(self.steps) + self.waits

    def named(self, prefix: str) -> int:
        return sum(1 for s in self.steps if s.startswith(prefix))


def _fault(step: str) -> StepFault:
    return StepFault(step=step, kind=FailureKind.UNAVAILABLE.value, message="connection refused")


def _answers(*, beats_fail: bool = False) -> Answer:
    def answer(name: str, now: float) -> Any:
        if name.startswith("heartbeat-"):
            if beats_fail:
                return BeatOutcome(outcome="failed", now=now, fault=_fault("heartbeat"))
            return BeatOutcome(outcome="recorded", now=now)
        if name.startswith("approval-check-"):
            return Look(now=now, state="pending")
        if name.startswith("drain-pass-"):
            return PassOutcome(now=now, report=DrainReport(node="n", remaining=["ns/a"]), held=True)
        return PassOutcome(now=now, fault=_fault(name))  # the apiserver is down

    return answer


def _pace(ledger: Ledger, hook: int = HOOK) -> Pace:
    hook_ref = LifecycleRef("asg", "hook", "tok", "autoscaling:EC2_INSTANCE_TERMINATING")
    iids = ("i-0123456789abcdef0",)
    event = Interruption("asg-terminate", "e", T0, "us-east-1", "1", iids, None, "x", lifecycle=hook_ref)
    ctx: Any = ledger
    return Pace(ctx, event, "i-0123456789abcdef0", now=T0, interval=pacing.heartbeat_interval(hook), dry_run=False)


def test_the_retry_waits_of_a_long_outage_never_come_sooner_than_the_model_counts() -> None:
    """The model's shortest wait is the shortest the real policy draws, before and after the fast retries."""
    spacing = pacing.loop_spacing(LIFE, 1)
    assert spacing == 231  # the retries of a 48 h outage: at least 231 s apart ...
    policy = RETRY_POLICIES[FailureKind.UNAVAILABLE]
    for attempt in (0, 5, policy.slow_after - 1, policy.slow_after, policy.slow_after + 500):
        draws = [policy.jittered(attempt, f"drain-pass-{attempt}@{T0 + i / 1000}", spacing) for i in range(5000)]
        low, top = policy.window(attempt, spacing)
        assert min(draws) == low >= pacing.shortest_retry(attempt, spacing)
        assert max(draws) == top
    assert policy.window(policy.slow_after, spacing) == (231, 288)  # ... and at most 288 s: an end seen within 5 min
    # a short drain's retries are the policy's own (from 1 s to its slow cap), as they were
    assert policy.window(policy.slow_after, pacing.loop_spacing(7200, 1)) == (10, 120)
    assert policy.window(3, 1) == (1, 16)


def test_48_h_of_an_unreachable_apiserver_stays_under_the_cap_as_the_model_says() -> None:
    ledger = Ledger(_answers())
    pace = _pace(ledger)
    out = pace.retrying("cordon", lambda _lb: None, PassOutcome, T0 + LIFE)
    assert out.fault is not None and ledger.now >= T0 + LIFE  # retried until the deadline, and no further
    retries = ledger.named("cordon-retry-")
    # not the ~2,900 a 60 s average wait would give: spread over the drain's life (a heartbeat cuts a wait short)
    beats = LIFE // pacing.heartbeat_interval(HOOK)
    assert 600 <= retries <= LIFE // pacing.loop_spacing(LIFE, 1) + beats + 20
    modelled = pacing.fault_paths(WS, LIFE, pacing.heartbeat_interval(HOOK), HOOK)["outage"]
    assert 0.8 * modelled <= ledger.operations <= modelled  # the model is this loop with every draw the shortest
    assert OUTSIDE + modelled <= MARGIN * pacing.MAX_DURABLE_OPERATIONS


@pytest.mark.parametrize("hook", [30, 300, 1728, 1800, 7200])
def test_heartbeats_failing_for_the_action_s_whole_life_cost_what_the_model_says(hook: int) -> None:
    """A held drain whose every heartbeat fails (Auto Scaling unreachable): the beats back off, come quicker near
    the action's lapse, then keep a heartbeat's pace; the flow is the held branch of drain_flow."""
    life = pacing.hook_global_timeout(hook, None)
    ledger = Ledger(_answers(beats_fail=True))
    pace, holds, watch = _pace(ledger, hook), HoldPace(WS), HeldWatch(10 * life)
    n = 0
    while True:
        out: PassOutcome = ledger.step(None, name=f"drain-pass-{n}")
        pace.absorb(out)
        if pace.now >= T0 + life:  # the last pass, at the deadline: the verdict follows
            break
        wait = holds.after(out, pace.now, watch)
        assert wait is not None
        wait_held(pace, wait, f"recheck-{n}", T0 + life)
        n += 1
    interval = pacing.heartbeat_interval(hook)
    held = pacing.paced_loop(
        life, 0.0, 1, lambda k: pacing.held_wait(k, WS), interval, through_beats=True, failing_beats=hook
    )
    assert (len(ledger.steps), ledger.waits) == (held.steps + held.heartbeats, held.waits)
    # until the lapse at most every BEAT_RETRY_MAX_SECONDS (quicker near it), then no more often than live beats
    before_lapse = (hook - interval) // pacing.BEAT_RETRY_MAX_SECONDS + 25
    assert ledger.named("heartbeat-") <= life // interval + before_lapse
    assert OUTSIDE + pacing.fault_paths(WS, life, interval, hook)["failing heartbeats"] <= (
        MARGIN * pacing.MAX_DURABLE_OPERATIONS
    )


def test_an_approval_nobody_answers_for_48_h_stays_under_the_cap_as_the_model_says() -> None:
    ws = WorkflowSettings(held_approval=True)
    ledger = Ledger(_answers())
    pace, holds, watch = _pace(ledger), HoldPace(ws), HeldWatch(10 * LIFE)
    ctx: Any = ledger
    every = pacing.approval_wait(ws, LIFE)
    assert every == 346  # a decision is acted on within 6 min in a drain of 48 h (within 2 min up to ~16 h)
    approval = Approval(ctx, pace.now, T0 + LIFE, "n", "e", every)
    n = 0
    while True:
        assert approval.look(ctx, pace, n) is None
        out: PassOutcome = ledger.step(None, name=f"drain-pass-{n}")
        pace.absorb(out)
        if pace.now >= T0 + LIFE:
            break
        wait = holds.after(out, pace.now, watch, asking=approval.every)
        assert wait is not None and wait <= every
        wait_held(pace, wait, f"recheck-{n}", T0 + LIFE)
        n += 1
    assert ledger.named("approval-check-") >= LIFE // every - 1  # looked at all along
    interval = pacing.heartbeat_interval(HOOK)
    held = pacing.paced_loop(
        LIFE, 0.0, 1, lambda k: min(pacing.held_wait(k, ws), every), interval, through_beats=True, looks=every
    )
    assert ledger.operations == 1 + held.operations  # the callback, then the loop as modelled
    assert ledger.operations <= pacing.fault_paths(ws, LIFE, interval, HOOK)["open approval"]
    assert OUTSIDE + pacing.fault_paths(ws, LIFE, interval, HOOK)["open approval"] <= (
        MARGIN * pacing.MAX_DURABLE_OPERATIONS
    )


def test_a_pass_sooner_than_the_approval_s_spacing_goes_on_without_a_look() -> None:
    ws = WorkflowSettings(held_approval=True)
    ledger = Ledger(_answers())
    pace = _pace(ledger)
    ctx: Any = ledger
    approval = Approval(ctx, pace.now, T0 + LIFE, "n", "e", 300)
    approval.look(ctx, pace, 0)
    pace.now += 299
    approval.look(ctx, pace, 1)
    pace.now += 1
    approval.look(ctx, pace, 2)
    assert [s for s in ledger.steps if s.startswith("approval")] == ["approval", "approval-check-0", "approval-check-2"]
    assert pacing.approval_wait(ws, 7200) == ws.recheck_max_seconds  # a drain of hours: as soon as before


@pytest.mark.parametrize("held_approval", [False, True])
def test_every_fault_path_of_the_default_settings_stays_under_the_cap_with_margin(held_approval: bool) -> None:
    ws = WorkflowSettings(held_approval=held_approval)
    for hook in (None, *pacing.HEARTBEAT_TIMEOUTS):
        b = pacing.worst_case(ws, hook)
        assert b.operations <= MARGIN * pacing.MAX_DURABLE_OPERATIONS, b
    paths = pacing.fault_paths(ws, LIFE, pacing.heartbeat_interval(HOOK), HOOK)
    assert set(paths) == {"outage", "failing heartbeats", *(["open approval"] if held_approval else [])}

"""The waits of a held drain: after a pass that ended because every pod left was held (engine/held_pass.py), the
flow waits durably — no compute billed — longer each time (pacing.held_recheck, up to HELD_RECHECK_MAX_SECONDS),
cut at the deadline policy's force time, a drain policy's release and the held notification (and, in Pace.wait, at
the deadline); while a surge waits for its Deployment's rollout, at most ROLLOUT_RECHECK_SECONDS (a rollout ends on
its own, and the surge is what lets the drain go), for ROLLOUT_FAST_CHECKS waits of the drain. A heartbeat due
during the wait is sent and the wait goes on: a held drain looks at the node once per wait, not once per heartbeat.
A pass that evicts or deletes a pod starts the waits over. A pass that ended queued for a far turn at its budgets
(drain/turn_queue.py) waits until it is about to come (pacing.queued_recheck), and neither lengthens the held waits
nor makes the next pass end at its first look; that pass reads the storm again, and after pacing.QUEUE_MAX_WAITS such
waits none ends queued.

Fed by checkpointed step results only, so a replay takes the same decisions.
"""

from __future__ import annotations

from drain_orchestrator import pacing
from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.drain.surge import SurgeStatus
from drain_orchestrator.workflow.held import HeldWatch
from drain_orchestrator.workflow.pace import Pace
from drain_orchestrator.workflow.results import PassOutcome
from drain_orchestrator.workflow_settings import WorkflowSettings


class HoldPace:
    def __init__(self, ws: WorkflowSettings, respect_until: float | None = None) -> None:
        self.ws = ws
        # the end of the drain's respectful minimum: the deadline policy may act from then, so a held wait ends there
        self.respect_until = respect_until
        self.held_passes = 0  # passes ended held since the last progress
        self.after_held = False  # the last pass ended held: the next one ends at its first look
        self.rollout_checks = 0  # waits cut short because a surge waited for a rollout
        self.after_queued = False  # the last pass ended queued: the next one reads the storm again
        self.queued_waits = 0  # waits for a far turn so far (at most pacing.QUEUE_MAX_WAITS)

    @property
    def may_queue(self) -> bool:
        """The next pass may end queued: this drain has not waited for a far turn QUEUE_MAX_WAITS times yet."""
        return self.queued_waits < pacing.QUEUE_MAX_WAITS

    def after(self, out: PassOutcome, now: float, watch: HeldWatch, *, asking: int | None = None) -> float | None:
        """The wait after this pass if it ended held, else None (the drain's usual recheck). ``asking``: an
        approval is open, and its answer is read between passes this often (pacing.approval_wait): no wait longer."""
        report = out.report
        if report is not None and (report.evicted or report.forced):
            self.held_passes = 0
        # a pass that ended queued comes back at its turn and looks in full: not at its first look only
        self.after_held = out.held and not out.queued
        self.after_queued = out.queued
        if not out.held:
            return None
        due = [out.wake_at] if out.wake_at is not None else []
        if self.respect_until is not None:
            due.append(self.respect_until)
        if watch.since is not None and not watch.said:
            due.append(watch.since + watch.notify_after)
        if out.queued:  # waiting its turn is not being held: the held waits after it do not grow
            self.queued_waits += 1
            want = pacing.queued_recheck(now, self.ws, due)
            return min(want, float(asking)) if asking is not None else want
        want = pacing.held_recheck(self.held_passes, now, self.ws, due)
        self.held_passes += 1
        quick = pacing.rollout_recheck(self.rollout_checks) if report is not None and _awaits_rollout(report) else None
        if quick is not None and quick < want:
            want = float(quick)
            self.rollout_checks += 1
        return min(want, float(asking)) if asking is not None else want


def _awaits_rollout(report: DrainReport) -> bool:
    return any(note.status == SurgeStatus.ROLLOUT.value for note in report.surge)


def wait_held(pace: Pace, seconds: float, name: str, until: float) -> None:
    """Wait ``seconds`` (by ``until``) durably, in pieces cut at each heartbeat due (Pace.wait sends it)."""
    end = min(pace.now + seconds, until)
    piece = 0
    while True:
        pace.wait(end - pace.now, name if piece == 0 else f"{name}-{piece}", until)
        if pace.now >= end - 0.5:
            return
        piece += 1

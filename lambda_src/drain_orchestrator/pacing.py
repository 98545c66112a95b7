"""How far apart a drain's durable steps are, and the most durable operations that pacing can cost (pure).

One home for the spacing rules — heartbeats and their retries, rechecks after a drain pass, the longer waits of a
held drain, gate checks, the retries of a long outage and the looks at an open approval — so that the workflow,
`explain`, the settings' cold-start check and `bench/held_cost.py` all ask the same functions. Stdlib and
`failures` only: `workflow_settings` runs `worst_case` at cold start and at `cdk synth` (the construct loads this
module on its own: settings_seam.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from drain_orchestrator.failures import RETRY_POLICIES

if TYPE_CHECKING:
    from drain_orchestrator.workflow_settings import WorkflowSettings

LIFECYCLE_GLOBAL_TIMEOUT_MAX = 48 * 3600  # AWS: a lifecycle action lasts at most 48 h ...
GLOBAL_TIMEOUT_HEARTBEATS = 100  # ... or 100 x its heartbeat timeout, whichever is smaller
HEARTBEAT_FALLBACK_INTERVAL = 10  # beat this often while the hook's own timeout is unknown
GATE_RECHECK_MAX_SECONDS = 15  # a gate is checked at least this often while a deregistration delay may run out ...
GATE_FAST_CHECKS = 80  # ... for this many checks (20 min: a target group's default delay is 5 min), then backs off
# A held drain whose surge waits for its Deployment's rollout to end looks again this soon (a rollout ends within
# its progressDeadlineSeconds, 10 min by default; the held waits may have grown to HELD_RECHECK_MAX) ...
ROLLOUT_RECHECK_SECONDS = 15
ROLLOUT_FAST_CHECKS = 20  # ... for this many waits of the drain (5 min), then as any held drain
# A pass whose pods are all held keeps watching this long after its last progress before it ends (a replacement
# pod becoming Ready lifts a budget within seconds); a pass that starts held after a held pass ends at first look.
HELD_LINGER_SECONDS = 30.0

# What one execution may cost, whatever the settings allow (workflow_settings refuses settings that could exceed).
MAX_DURABLE_OPERATIONS = 3000
MAX_CHECKPOINT_BYTES = 100 * 1024 * 1024
# The largest checkpoint of one operation: a drain pass's report of a full node (every pod held, reasons clipped).
CHECKPOINT_BYTES_PER_OPERATION = 32 * 1024
# Operations outside the paced loops: plan, locate, cordon, claims, announce (and its deferred Event), held notices,
# the verdict's steps, first retries of a failed step, the pass and wait that end a drain's respectful minimum.
FIXED_OPERATIONS = 42
# A drain waits away from its budgets for a far turn (drain/turn_queue.py) at most this many times: each wait and the
# pass after it are two operations its paced loops do not count, so worst_case adds them.
QUEUE_MAX_WAITS = 4
# A loop that lasts as long as a fault does (a step's retries, an unanswered approval's looks) spends at most this
# many operations over a drain's whole life (loop_spacing): with its heartbeats, the steps outside the loops and
# the gates' fast checks, a drain of 48 h stays a few hundred operations under the cap.
FAULT_LOOP_OPERATIONS = 1500
# Hook HeartbeatTimeouts probed for the worst case (AWS accepts 30..7200 s): 1728 s is where 100 x the timeout
# reaches 48 h, the most heartbeats one action can need.
HEARTBEAT_TIMEOUTS = (30, 60, 120, 300, 600, 900, 1200, 1728, 1800, 2700, 3600, 7200)


def hook_global_timeout(heartbeat_timeout: int, reported: int | None) -> int:
    """A lifecycle action's lifetime: AWS's rule applied rather than the reported field alone (emulators
    report 48 h regardless)."""
    candidates = [LIFECYCLE_GLOBAL_TIMEOUT_MAX, GLOBAL_TIMEOUT_HEARTBEATS * heartbeat_timeout]
    if reported:
        candidates.append(reported)
    return min(candidates)


def heartbeat_interval(heartbeat_timeout: int | None) -> int:
    """Beat at a third of the timeout: a failed or late beat still leaves time for two more tries."""
    if heartbeat_timeout is None:
        return HEARTBEAT_FALLBACK_INTERVAL
    return max(5, heartbeat_timeout // 3)


BEAT_RETRY_MAX_SECONDS = 120


def beat_retry_delay(
    failures: int, interval: int | None, now: float | None = None, lapses: float | None = None
) -> float:
    """When a failed heartbeat is tried again (``failures`` in a row before it, from 0): 2 s doubling, never more
    than a heartbeat interval, and never more than half the time left before the action ``lapses`` (its last
    recorded heartbeat + its HeartbeatTimeout): backing off from a refusal, yet trying more often as the lapse comes
    near, so a fault shorter than the timeout never costs the action. Past the lapse nothing is left to save (AWS
    has applied the hook's default result, by this clock) and a beat can only learn that the action is over: once a
    HeartbeatTimeout (three intervals), so heartbeats failing for days cost fewer operations than heartbeats do."""
    if now is not None and lapses is not None and now >= lapses:
        return float(3 * interval if interval else BEAT_RETRY_MAX_SECONDS)
    delay = float(min(BEAT_RETRY_MAX_SECONDS, 2 * 2 ** min(failures, 16)))
    if interval is not None:
        delay = min(delay, float(interval))
    if now is not None and lapses is not None:
        delay = min(delay, (lapses - now) / 2)
    return max(1.0, delay)


def loop_spacing(life: float, steps: int) -> int:
    """The least wait between two rounds of a loop that may last a drain's whole ``life`` (seconds) and costs
    ``steps`` steps and a wait a round — the retries of a failing step (1 step; 2 while an approval is open: its
    look comes first) and the looks at an open approval (a look and a pass) — so that such a loop fits
    FAULT_LOOP_OPERATIONS whatever its length: 231 s between the retries of a 48 h outage, 10 s for a drain of 2 h
    (the retry policy's own backoff is then the longer)."""
    return max(1, math.ceil(life * (steps + 1) / FAULT_LOOP_OPERATIONS))


def approval_wait(ws: WorkflowSettings, life: float) -> int:
    """How often an open approval is looked at, and the longest held wait while it is open: RECHECK_MAX_SECONDS (a
    decision is acted on that soon, plus a pass), or the loop's spacing when the drain is so long that looks that
    often would pass the cap (346 s for 48 h)."""
    return max(ws.recheck_max_seconds, loop_spacing(life, 2))


def look_due(last_look: float, every: int, now: float) -> bool:
    """Whether an open approval is looked at again before the pass that starts at ``now``."""
    return now >= last_look + every - 0.5


def recheck_delay(attempt: int, ws: WorkflowSettings) -> int:
    """The durable wait after drain pass ``attempt`` (0-based): doubling from RECHECK_MIN to RECHECK_MAX."""
    return int(min(ws.recheck_max_seconds, ws.recheck_min_seconds * 2 ** min(attempt, 16)))


def held_wait(attempt: int, ws: WorkflowSettings) -> int:
    """The durable wait after the ``attempt``-th (0-based) pass in a row that ended early because every pod left
    was held: doubling from RECHECK_MIN to HELD_RECHECK_MAX. Nothing is billed while it runs."""
    return int(min(ws.held_recheck_max_seconds, ws.recheck_min_seconds * 2 ** min(attempt, 16)))


def rollout_recheck(checks: int) -> int | None:
    """The held wait's cap while a surge waits for a rollout, after ``checks`` such waits; None once they are used."""
    return ROLLOUT_RECHECK_SECONDS if checks < ROLLOUT_FAST_CHECKS else None


def gate_recheck_delay(attempt: int, ws: WorkflowSettings) -> int:
    """The durable wait between two checks of a gate: like drain rechecks but at most GATE_RECHECK_MAX_SECONDS
    for the first GATE_FAST_CHECKS (a target group's deregistration delay is known to the second; waiting much
    past it holds the instance), then doubling up to HELD_RECHECK_MAX (a gate held that long waits on a person)."""
    if attempt < GATE_FAST_CHECKS:
        return min(GATE_RECHECK_MAX_SECONDS, recheck_delay(attempt, ws))
    slow = GATE_RECHECK_MAX_SECONDS * 2 ** min(attempt - GATE_FAST_CHECKS + 1, 16)
    return int(max(GATE_RECHECK_MAX_SECONDS, min(ws.held_recheck_max_seconds, slow)))


def pass_budget(now: float, deadline: float, ws: WorkflowSettings, respect_until: float | None = None) -> float:
    """Seconds one drain pass may run: DRAIN_PASS_SECONDS, never past the deadline. A pass inside the drain's
    respectful minimum (``respect_until``, where the deadline policy is off) ends with it when the deadline is
    within two passes: the next pass, with the policy on, still comes before the deadline."""
    end = min(now + ws.drain_pass_seconds, deadline)
    if respect_until is not None and now < respect_until and deadline <= now + 2 * ws.drain_pass_seconds:
        end = min(end, respect_until)
    return max(1.0, end - now)


def wait_seconds(now: float, want: float, deadline: float, next_beat: float | None) -> int:
    """A durable wait of ``want`` seconds, shortened so it ends by the deadline and by the next heartbeat due."""
    end = min(now + want, deadline)
    if next_beat is not None:
        end = min(end, next_beat)
    return max(1, math.ceil(end - now))


def queued_recheck(now: float, ws: WorkflowSettings, due: list[float]) -> float:
    """The wait after a pass that ended queued for a far turn (drain/turn_queue.py): until the first of ``due`` still
    ahead (its return, the deadline policy's force time, the held notification), never over HELD_RECHECK_MAX."""
    return _cut_at_due(float(ws.held_recheck_max_seconds), now, due)


def held_recheck(attempt: int, now: float, ws: WorkflowSettings, due: list[float]) -> float:
    """The wait after a pass that ended held: ``held_wait``, cut at the first of ``due`` still ahead (the deadline
    policy's force time, a drain policy's release, the held notification)."""
    return _cut_at_due(float(held_wait(attempt, ws)), now, due)


def _cut_at_due(want: float, now: float, due: list[float]) -> float:
    """``want`` seconds, or less: until the first of ``due`` (epochs) still ahead of ``now``; at least 1 s."""
    ahead = [t - now for t in due if t > now]
    return max(1.0, min([want, *ahead]))


@dataclass(frozen=True)
class Bound:
    """The most one drain can cost under some settings, and the case that costs it."""

    operations: int
    checkpoint_bytes: int
    horizon: int  # seconds from the event to the drain's latest deadline
    heartbeat_timeout: int | None  # the hook's timeout of the worst case (None: no lifecycle hook)
    # "passes", "held passes", "gate checks", or a fault path: "outage", "failing heartbeats", "open approval"
    path: str


@dataclass
class Loop:
    """The durable operations of one paced loop: its steps (drain passes, gate checks), waits and heartbeats."""

    steps: int = 0
    waits: int = 0
    heartbeats: int = 0

    @property
    def operations(self) -> int:
        return self.steps + self.waits + self.heartbeats


@dataclass
class BeatClock:
    """When the flow's heartbeat steps fall due, as workflow/pace.py's Pace decides: an interval after the last
    recorded beat; ``timeout`` set: every beat fails (the hook's HeartbeatTimeout says when the action lapses) and is
    tried again after beat_retry_delay."""

    interval: int | None
    timeout: int | None = None
    last: float = 0.0
    retry_at: float | None = None
    failures: int = 0

    def due(self) -> float | None:
        if not self.interval:
            return None
        due = self.last + self.interval
        return due if self.retry_at is None else max(due, self.retry_at)

    def stepped(self, now: float) -> None:
        """A step ran until ``now``: its own thread beat for it (heartbeat.py), when beats succeed."""
        while self.interval and self.timeout is None and self.last + self.interval <= now:
            self.last += self.interval

    def beat(self, now: float) -> None:
        if self.timeout is None:
            self.last = now
            return
        assert self.interval
        lapses = self.last + self.timeout
        self.retry_at = now + beat_retry_delay(self.failures, self.interval, now, lapses)
        self.failures += 1


def paced_loop(
    horizon: float,
    step_seconds: float,
    steps: int,
    delay: Callable[[int], int],
    interval: int | None,
    *,
    through_beats: bool = False,
    failing_beats: int | None = None,
    looks: int | None = None,
) -> Loop:
    """One paced loop run until ``horizon``: ``steps`` steps of ``step_seconds`` each, a durable wait of
    ``delay(k)`` cut at the next heartbeat (a heartbeat step follows when due), as in workflow/pace.py;
    ``through_beats``: the wait goes on after the heartbeat (workflow/hold_pace.py); ``failing_beats``: every
    heartbeat fails, and the hook's HeartbeatTimeout is this (BeatClock); ``looks``: one step more before a
    round's steps when this many seconds passed since the last (an open approval's look, workflow/approval.py).
    Stops counting once past MAX_DURABLE_OPERATIONS."""
    now = 0.0
    beats = BeatClock(interval, failing_beats)
    out, k = Loop(), 0
    looked: float | None = None
    while out.operations <= MAX_DURABLE_OPERATIONS:
        if looks is not None and (looked is None or look_due(looked, looks, now)):
            out.steps, looked = out.steps + 1, now
        out.steps += steps
        now = min(horizon, now + step_seconds)
        beats.stepped(now)
        if now >= horizon:
            break
        end = min(horizon, now + delay(k))
        k += 1
        while True:
            next_beat = beats.due()
            now += wait_seconds(now, end - now, horizon, next_beat)
            out.waits += 1
            if next_beat is not None and now >= next_beat - 0.5:
                out.heartbeats += 1
                beats.beat(now)
            if not through_beats or now >= end - 0.5:
                break
    return out


def shortest_retry(attempt: int, spacing: int) -> int:
    """The shortest wait the retry policies allow before the retry after ``attempt`` (failures.RetryPolicy.window,
    over every kind retried until the deadline): what a drain's retries cost when every draw is the shortest."""
    return _shortest_retry(min(attempt, _RETRIES_SETTLED), spacing)


# past every policy's slow_after a policy's window no longer depends on the attempt: the model's loops ask the same
# few values tens of thousands of times at cold start (the settings check), so they are remembered
_RETRIES_SETTLED = max(p.slow_after for p in RETRY_POLICIES.values())


@functools.cache
def _shortest_retry(attempt: int, spacing: int) -> int:
    return min(p.window(attempt, spacing)[0] for p in RETRY_POLICIES.values() if p.attempts is None)


def fault_paths(ws: WorkflowSettings, horizon: float, interval: int | None, hook: int | None) -> dict[str, int]:
    """The operations of the drain's loops while something keeps failing, for its whole ``horizon``:
    - "outage": every pass (or locate, cordon) fails at once and is retried after the shortest wait the retry
      policies allow (loop_spacing once past their fast retries), an open approval looked at as often as it may be;
    - "failing heartbeats": every heartbeat fails while the drain's passes run their budget or end held;
    - "open approval": the held notification's approval is never answered (HELD_APPROVAL=on), looked at every
      approval_wait before a pass, held or not; its callback is one operation more."""
    asking = ws.held_approval
    every = approval_wait(ws, horizon) if asking else None
    spacing = loop_spacing(horizon, 2 if asking else 1)
    paths = {
        "outage": paced_loop(horizon, 0.0, 1, lambda k: shortest_retry(k, spacing), interval, looks=every).operations,
    }
    if interval:
        failing = [
            paced_loop(horizon, ws.drain_pass_seconds, 1, lambda k: recheck_delay(k, ws), interval, failing_beats=hook),
            paced_loop(horizon, 0.0, 1, lambda k: held_wait(k, ws), interval, through_beats=True, failing_beats=hook),
        ]
        paths["failing heartbeats"] = max(loop.operations for loop in failing)
    if every is not None:
        looks = [
            paced_loop(horizon, ws.drain_pass_seconds, 1, lambda k: recheck_delay(k, ws), interval, looks=every),
            paced_loop(
                horizon, 0.0, 1, lambda k: min(held_wait(k, ws), every), interval, through_beats=True, looks=every
            ),
        ]
        paths["open approval"] = 1 + max(loop.operations for loop in looks)
    return paths


def worst_case(ws: WorkflowSettings, heartbeat_timeout: int | None) -> Bound:
    """The most durable operations (and checkpoint bytes) one instance's drain can use with these settings and a
    lifecycle hook of this HeartbeatTimeout (None: an event without a hook), until its latest deadline: the worst
    of the paced loops — passes that run their whole budget and recheck, passes that end held and wait longer each
    time (and look again soon while a surge waits for a rollout), gate checks, and the fault paths (fault_paths) —
    over the whole horizon, plus the gate's fast checks and FIXED_OPERATIONS."""
    if heartbeat_timeout is None:
        kinds = (ws.deadline_rebalance, ws.deadline_state_change, ws.scheduled_change_lead)
        horizon = float(max(*kinds, 120))
        interval = None
    else:
        horizon = float(hook_global_timeout(heartbeat_timeout, None))
        if ws.deadline_asg_terminate is not None:
            horizon = min(horizon, float(ws.deadline_asg_terminate))
        interval = heartbeat_interval(heartbeat_timeout)
    held = paced_loop(horizon, 0.0, 1, lambda k: held_wait(k, ws), interval, through_beats=True)
    # each wait for a far turn at a budget (drain/turn_queue.py) is at most one more pass and wait, in either loop
    queued = 2 * QUEUE_MAX_WAITS
    paths = {
        "passes": paced_loop(horizon, ws.drain_pass_seconds, 1, lambda k: recheck_delay(k, ws), interval).operations
        + queued,
        # each quick look while a surge waits for a rollout is at most one more pass and wait
        "held passes": held.operations + 2 * ROLLOUT_FAST_CHECKS + queued,
        "gate checks": paced_loop(horizon, 0.0, 2, lambda k: gate_recheck_delay(k, ws), interval).operations,
        **fault_paths(ws, horizon, interval, heartbeat_timeout),
    }
    path = max(paths, key=lambda p: paths[p])
    ops = FIXED_OPERATIONS + paths[path] + 3 * GATE_FAST_CHECKS
    return Bound(ops, ops * CHECKPOINT_BYTES_PER_OPERATION, int(horizon), heartbeat_timeout, path)


def worst_case_any_hook(ws: WorkflowSettings) -> Bound:
    """``worst_case`` over every hook timeout AWS accepts (probed) and events without a hook."""
    cases = [worst_case(ws, hb) for hb in (None, *HEARTBEAT_TIMEOUTS)]
    return max(cases, key=lambda b: (b.operations, b.checkpoint_bytes))

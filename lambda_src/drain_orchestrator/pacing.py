"""How far apart a drain's durable steps are, and the most durable operations that pacing can cost (pure).

One home for the spacing rules — heartbeats, rechecks after a drain pass, the longer waits of a held drain, gate
checks — so that the workflow, `explain`, the settings' cold-start check and `bench/held_cost.py` all ask the same
functions. Stdlib only: `workflow_settings` runs `worst_case` at cold start and at `cdk synth` (the construct loads
this module on its own: settings_seam.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

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


def held_recheck(attempt: int, now: float, ws: WorkflowSettings, due: list[float]) -> float:
    """The wait after a pass that ended held: ``held_wait``, cut at the first of ``due`` still ahead (the deadline
    policy's force time, a drain policy's release, the held notification)."""
    want = float(held_wait(attempt, ws))
    ahead = [t - now for t in due if t > now]
    return max(1.0, min([want, *ahead]))


@dataclass(frozen=True)
class Bound:
    """The most one drain can cost under some settings, and the case that costs it."""

    operations: int
    checkpoint_bytes: int
    horizon: int  # seconds from the event to the drain's latest deadline
    heartbeat_timeout: int | None  # the hook's timeout of the worst case (None: no lifecycle hook)
    path: str  # "passes", "held passes" or "gate checks"


@dataclass
class Loop:
    """The durable operations of one paced loop: its steps (drain passes, gate checks), waits and heartbeats."""

    steps: int = 0
    waits: int = 0
    heartbeats: int = 0

    @property
    def operations(self) -> int:
        return self.steps + self.waits + self.heartbeats


def paced_loop(
    horizon: float,
    step_seconds: float,
    steps: int,
    delay: Callable[[int], int],
    interval: int | None,
    *,
    through_beats: bool = False,
) -> Loop:
    """One paced loop run until ``horizon``: ``steps`` steps of ``step_seconds`` each, a durable wait of
    ``delay(k)`` cut at the next heartbeat (a heartbeat step follows when due), as in workflow/pace.py;
    ``through_beats``: the wait goes on after the heartbeat (workflow/hold_pace.py). Stops counting once past
    MAX_DURABLE_OPERATIONS."""
    now = last_beat = 0.0
    out, k = Loop(), 0
    while out.operations <= MAX_DURABLE_OPERATIONS:
        out.steps += steps
        now = min(horizon, now + step_seconds)
        while interval and last_beat + interval <= now:  # beats inside a step are the step's own thread
            last_beat += interval
        if now >= horizon:
            break
        end = min(horizon, now + delay(k))
        k += 1
        while True:
            next_beat = last_beat + interval if interval else None
            now += wait_seconds(now, end - now, horizon, next_beat)
            out.waits += 1
            if next_beat is not None and now >= next_beat - 0.5:
                out.heartbeats += 1
                last_beat = now
            if not through_beats or now >= end - 0.5:
                break
    return out


def worst_case(ws: WorkflowSettings, heartbeat_timeout: int | None) -> Bound:
    """The most durable operations (and checkpoint bytes) one instance's drain can use with these settings and a
    lifecycle hook of this HeartbeatTimeout (None: an event without a hook), until its latest deadline: the worst
    of the three paced loops — passes that run their whole budget and recheck, passes that end held and wait
    longer each time (and look again soon while a surge waits for a rollout), gate checks — over the whole horizon,
    plus the gate's fast checks and FIXED_OPERATIONS."""
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
    paths = {
        "passes": paced_loop(horizon, ws.drain_pass_seconds, 1, lambda k: recheck_delay(k, ws), interval).operations,
        # each quick look while a surge waits for a rollout is at most one more pass and wait
        "held passes": held.operations + 2 * ROLLOUT_FAST_CHECKS,
        "gate checks": paced_loop(horizon, 0.0, 2, lambda k: gate_recheck_delay(k, ws), interval).operations,
    }
    path = max(paths, key=lambda p: paths[p])
    ops = FIXED_OPERATIONS + paths[path] + 3 * GATE_FAST_CHECKS
    return Bound(ops, ops * CHECKPOINT_BYTES_PER_OPERATION, int(horizon), heartbeat_timeout, path)


def worst_case_any_hook(ws: WorkflowSettings) -> Bound:
    """``worst_case`` over every hook timeout AWS accepts (probed) and events without a hook."""
    cases = [worst_case(ws, hb) for hb in (None, *HEARTBEAT_TIMEOUTS)]
    return max(cases, key=lambda b: (b.operations, b.checkpoint_bytes))

"""Ending a drain pass that cannot progress, so that a held drain waits durably instead of polling.

A drain is held when every pod still on the node is refused by a PodDisruptionBudget that allows nothing (or parked
until the deadline policy), or let finish by its drain policy, and no pod is on its way out. Only something outside
the drain changes that (a replacement becoming Ready, an operator), so the pass watches the budgets for
HELD_LINGER_SECONDS after its last progress or the last rise of a budget it waits on (in a storm the budgets move
while other drains take their turns, and this drain's turn comes within the pass), then ends; the workflow waits
durably, longer each time (pacing.held_recheck), and looks again. A pass that starts held after a held pass ends
at its first look, unless it surged (its replacement lifts the budget in seconds: it watches for that).

A storm's drain whose turn at its budgets is far off ends its pass too, queued, once it has watched them for
QUEUE_LOOK_SECONDS: it waits durably for about as long as the drains ahead of it need (drain/turn_queue.py), then
looks again like any pass (not quick, and its wait does not lengthen the held waits after it).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from drain_orchestrator.drain.report import DrainReport
from drain_orchestrator.drain.surge import SurgeStatus
from drain_orchestrator.drain.turn_queue import QUEUE_LOOK_SECONDS, queue_wait
from drain_orchestrator.engine.node_view import Leaving
from drain_orchestrator.engine.parts import DrainParts
from drain_orchestrator.engine.pod_record import PodRecords


@dataclass(frozen=True)
class QueueLook:
    """What a drain that ended queued judged its turn from (drain/turn_queue.py), for its pass's log line: the budget
    it waits the least for, the drains still wanting it, the disruptions its watch saw it give over how many
    seconds, what it allows at once, and the durable wait drawn."""

    budget: str
    drains_left: int
    falls_seen: int
    watched_seconds: float
    allows: int
    wait_seconds: float

    def to_log(self) -> dict[str, object]:
        return {
            "budget": self.budget,
            "drains_left": self.drains_left,
            "falls_seen": self.falls_seen,
            "watched_seconds": round(self.watched_seconds, 1),
            "allows": self.allows,
            "wait_seconds": round(self.wait_seconds, 1),
        }


@dataclass
class HoldCheck:
    """Given to ``drain_node``: when to end a held pass, and what it found."""

    linger: float  # seconds a held pass keeps watching after its last progress
    quick: bool = False  # the last pass ended held: end at the first look unless this one progresses
    ended: bool = False  # this pass ended because it was held
    queued: bool = False  # ended to wait for a far turn at its budgets (drain/turn_queue.py)
    wake_at: float | None = None  # epoch: the first time the drain's own clock acts (force-delete, a release)
    queue_look: QueueLook | None = None  # what a queued pass judged its far turn from
    _since: float | None = None  # monotonic: held since
    _progressed: bool = False
    _look_at: float | None = None  # monotonic: when to judge how far its turn is (once a pass)
    _judged: bool = False

    def until(self, end: float) -> float:
        """``end`` (monotonic), or sooner when the pass is held: when its linger runs out, or its turn is judged."""
        if self._since is None:
            return end
        end = min(end, self._since + self.linger)
        return end if self._look_at is None else min(end, self._look_at)

    def ends(self, drain: DrainParts, last: DrainReport) -> bool:
        """Fold the latest pass in; True when the pass should end here, held."""
        mono = drain.clock.mono()
        if last.evicted or last.forced:
            self._progressed = True
        if not held(drain.pods, drain.leaving, last):
            self._since = None
            if self._look_at is not None and mono >= self._look_at:
                self._look_at, self._judged = None, True  # moving when it looked: its turn is not far
            return False
        if self._since is None:
            self._since = mono
        surged = any(note.status == SurgeStatus.SURGED.value and note.via is not None for note in last.surge)
        if surged:
            # replicas added in this pass: the replacement lifts the budget within seconds, so watch for it
            # instead of ending at the first look (the next look may be a held wait of many minutes away)
            self._since, self._progressed = mono, True
        rose = drain.budgets.rose_at
        if rose is not None and rose > self._since:
            self._since = rose  # a budget it waits on is moving (a storm's drains take it in turn): watch on
        away = None if surged else self._far_turn(drain, mono)
        if away is not None or (self.quick and not self._progressed) or mono - self._since >= self.linger:
            self.ended = True
            first = drain.pods.first_wake()
            wakes = [] if first is None else [drain.clock.wall() + max(0.0, first - mono)]
            if away is not None:
                self.queued = True
                wakes.append(drain.clock.wall() + away)
            self.wake_at = min(wakes, default=None)
            return True
        return False

    def _far_turn(self, drain: DrainParts, mono: float) -> float | None:
        """Seconds to wait away from the budgets' watch, once they were watched QUEUE_LOOK_SECONDS since the first
        wave counted the drains; None to watch on. Only when every budget its pods wait on was counted, every one's
        turn is far, and the drain comes back with half the time to its deadline left at least."""
        if self._judged or drain.options.dry_run or math.isinf(drain.options.queue_after):
            return None  # judged once a pass; a drain that may not queue (any more) is not made to look
        counted = drain.turns.counted_at
        keys = sorted(drain.pods.waited_budgets())
        queues = [drain.turns.queue(key) for key in keys]
        if counted is None or not queues or any(q is None for q in queues):
            return None
        if self._look_at is None:
            self._look_at = counted + QUEUE_LOOK_SECONDS
        if mono < self._look_at:
            return None
        self._look_at, self._judged = None, True
        after = drain.options.queue_after
        waits = [queue_wait(*q, after, random.random(), random.random()) for q in queues if q is not None]
        if any(w is None for w in waits):
            return None
        away, at = min((w, i) for i, w in enumerate(waits) if w is not None)
        deadline = drain.options.deadline
        if deadline is not None:  # back with half its time left at least: the turns it misses away are its margin
            away = min(away, (deadline - drain.clock.wall()) / 2)
        if away < after:
            return None
        left, falls, watched, allows = queues[at] or (0, 0, 0.0, 0)
        self.queue_look = QueueLook(f"{keys[at][0]}/{keys[at][1]}", left, falls, watched, allows, away)
        return away


def held(pods: PodRecords, leaving: Leaving, last: DrainReport) -> bool:
    """Every pod left is held by a budget, by the deadline policy's parking or by its drain policy, none is going."""
    if not last.remaining or last.refused or last.drained:
        return False
    if pods.going or leaving.deletion_times or last.terminating or last.throttled or last.failed:
        return False
    waiting = {r.key for r in pods if r.waiting_on}
    parked = {r.key for r in pods if r.parked}  # several budgets: left to the deadline policy
    by_policy = {p.pod for p in last.held_by_policy}
    blocked = {b.pod for b in last.blocked}
    return all(pod in by_policy or (pod in blocked and pod in waiting | parked) for pod in last.remaining)

"""Budget turns, the drain's state of them (the rules: drain/turns.py; the words: docs/glossary.md).

``BudgetTurns`` is what one drain keeps across its waits: the lag it measured, the races it lost, how many drains may
still want each budget of its first wave, and when it may next send a budget-admitted eviction. ``Turns`` is one
wait's view of the budgets it watches: each budget's turn, drawn at its rise and moved as the budget allows more or
less. Times are monotonic (engine/clock.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.turns import (
    TURN_WINDOW_MAX_SECONDS,
    Key,
    TurnLag,
    budget_share,
    contention_jitter,
    contention_of,
    turn_at_level,
    turn_hold_off,
    turns_per_slot,
)
from drain_orchestrator.engine.clock import CLOCK, Clock
from drain_orchestrator.kube.evict import Outcome

# a storm's drains cordon over a second or two (their events arrive apart, their containers start apart): a count
# taken by one of the first is short of the storm, and its turns would be spread over too few drains; counted again
# at the first rise of one of its budgets that comes this long after the first count
RECOUNT_AFTER_SECONDS = 1.0


@dataclass(frozen=True)
class Recount:
    """The first wave's count of draining nodes, to be taken again once at a rise of one of its budgets."""

    counted: int  # draining nodes at the first count
    pods_of: Mapping[Key, int]  # each budget's expected pods (no more drains can want it than it has pods)
    at: float  # when counted


class BudgetTurns:
    """Invariants: ``lost`` and ``wanting`` never go below 0; ``contenders`` only widen by a recount (the falls seen
    take drains off instead); a recount is taken once."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lag = TurnLag()  # how late a budget's fall reaches this drain: the turns' slot
        self.falls: dict[Key, int] = {}  # each budget's disruptions taken (by any drain), as this drain's watch saw
        self.lost = 0  # budget-admitted evictions refused in a row (other drains took the disruption first)
        # the first wave's estimate of the drains sharing its budgets: spreads its turns, one step less with each
        # budget-admitted eviction that goes through (a storm's tail has fewer drains left to share with)
        self.wanting = 0
        # per budget of the first wave's turns: the drains that may want it (draining nodes, at most its pods); less
        # its falls since, that is the drains still wanting it, which the turns' spread follows
        self.contenders: dict[Key, int] = {}
        self.recount: Recount | None = None
        self.not_before = 0.0  # no budget-admitted eviction before this (drawn at the last refusal)
        self.first_wave_read = False  # the first wave's budgets were looked at (engine/first_wave.py)
        self.counted_at: float | None = None  # when the first wave counted the draining nodes
        # seconds since the count the drain's waits read the budgets' watch over, every change in them counted in
        # ``falls``, and the end of the last such wait
        self.watched_seconds = 0.0
        self._read_through: float | None = None
        self.allows: dict[Key, int] = {}  # the most each first-wave budget allows at once (all its pods healthy)
        self.draining_seen: int | None = None  # nodes draining at once at the first wave (this one included)

    def slot(self, options: DrainOptions) -> float:
        """The slot the turns are drawn in: from the lag this drain measured, else the configured one."""
        return self.lag.slot(options.budget_jitter_slot, options.budget_jitter_cap)

    def recount_due(self, key: Key) -> bool:
        """A rise of a first-wave budget, RECOUNT_AFTER_SECONDS or more after the first count: count again now."""
        rc = self.recount
        return rc is not None and key in self.contenders and self.clock.mono() - rc.at >= RECOUNT_AFTER_SECONDS

    def recounted(self, draining: int | None) -> None:
        """The draining nodes counted again (None: the count failed): widen the turns of the budgets by the drains
        that started since. Never narrows them: a drain over since then is already taken off by the falls seen."""
        rc, self.recount = self.recount, None
        if rc is None or draining is None or draining <= rc.counted:
            return
        for key, n in self.contenders.items():
            self.contenders[key] = max(n, min(draining, rc.pods_of.get(key, draining)))
        self.wanting += contention_of(draining) - contention_of(rc.counted)

    def hold_off(self, key: Key, allowed: int, options: DrainOptions) -> float:
        """Drawn at each rise: after a lost race, not before its backoff; else a window that widens with the races
        lost in a row (at least the first slot: a drain waiting here was refused once already, at most
        budget_jitter_cap) and, for a budget of the first wave's turns, one slot for as many drains still wanting it
        as a slot holds at what it allows (turns_per_slot, once this drain measured its lag; at most
        TURN_WINDOW_MAX_SECONDS)."""
        backoff = self.not_before - self.clock.mono()
        wanting = self.wanting
        if key in self.contenders:
            left = max(1, self.contenders[key] - self.falls.get(key, 0))
            wanting = contention_of(left, turns_per_slot(allowed, measured=self.lag.measured))
        drawn = turn_hold_off(
            self.lost, wanting, self.slot(options), options.budget_jitter_cap, TURN_WINDOW_MAX_SECONDS
        )
        return max(backoff, drawn)

    def admitted(self, waiting: list[tuple[str, list[Key]]], allowing: Mapping[Key, int]) -> dict[str, list[Key]]:
        """Of the pods ``waiting`` for their turn (identity, its budgets), those the budgets ``allowing`` at their turn
        admit now, at most what each allows (budget_share), with their budgets; none while a lost race's backoff
        runs: a budget that looks open may already be taken by evictions still in flight (the apiserver holds
        concurrent evictions of one PDB for seconds)."""
        if self.clock.mono() < self.not_before:
            return {}
        budgets = dict(waiting)
        return {i: list(budgets[i]) for i in budget_share(waiting, allowing)}

    def after_evictions(self, admitted: list[tuple[Outcome, list[Key]]], options: DrainOptions, sent_at: float) -> None:
        """The budget-admitted evictions of a pass, each with its budgets, sent at ``sent_at``. One refused means other
        drains took the disruption first: back off more. One that went through is timed until the budget's watch
        shows its fall (the lag)."""
        outcomes = [outcome for outcome, _ in admitted]
        for outcome, budgets in admitted:
            if outcome is Outcome.EVICTED:
                for key in budgets:
                    self.lag.sent(key, sent_at)
        if Outcome.EVICTED in outcomes:
            self.wanting = max(0, self.wanting - 1)
        if Outcome.BLOCKED in outcomes:
            self.lost += 1
            pause = contention_jitter(self.lost, self.slot(options), options.budget_jitter_cap)
            self.not_before = self.clock.mono() + pause
        elif Outcome.EVICTED in outcomes:
            self.lost = max(0, self.lost - 1)

    def first_wave(
        self, draining: int, expected: Mapping[Key, int], keys: set[Key], allowed: Mapping[Key, int] | None = None
    ) -> None:
        """The first wave waits for its turns at budgets ``keys``, ``draining`` nodes draining (``expected``: each
        listed budget's expected pods; ``allowed``: the most each allows at once, first_wave.py budget_capacity)."""
        self.wanting = contention_of(draining)
        for key in keys:
            self.contenders[key] = min(draining, expected.get(key, draining))
            self.allows[key] = max(1, (allowed or {}).get(key, 1))
        pods_of = {k: expected[k] for k in keys if k in expected}
        self.counted_at = self.clock.mono()
        self.recount = Recount(draining, pods_of, self.counted_at)

    def watched(self, started: float, ended: float, *, read_on: bool) -> None:
        """A wait on the budgets from ``started`` to ``ended``. One that ``read_on`` from the last wait's watch read
        the changes queued in it since that wait ended (a pass between), so its falls are counted from there; one that
        listed the budgets again counts from its start. Why not the time since the count: the falls of a pass between
        two waits are read only by the next wait, and a drain judging its turn after a long pass (a loaded apiserver, a
        turn's evictions) would count that pass's seconds without its falls: the budget would look several times
        slower than it is, and the drain would wait for its turn long after it came."""
        if self.counted_at is None:
            return
        last = self.counted_at if self._read_through is None else self._read_through
        since = last if read_on else started
        self.watched_seconds += max(0.0, ended - max(since, self.counted_at))
        self._read_through = ended

    def queue(self, key: Key) -> tuple[int, int, float, int] | None:
        """How the queue at a first-wave budget looks from here: the drains still wanting it (this one included), the
        disruptions this drain's watch saw it give, over how many seconds of reading it (``watched``), and how many it
        allows at once (drain/turn_queue.py); None for a budget the first wave did not count."""
        if key not in self.contenders or self.counted_at is None:
            return None
        falls = self.falls.get(key, 0)
        left = max(1, self.contenders[key] - falls)
        return left, falls, self.watched_seconds, self.allows.get(key, 1)


class Turns:
    """One wait's turns: each watched budget's turn, drawn when it rises (to allowing) with what it allows; gone when
    it falls back; nearer or further as it allows more or less meanwhile (turn_at_level). ``falls``: each budget's
    disruptions taken, as this watch saw them, added to across waits; ``lag``: this drain's, whether a turn was drawn
    from a measured lag."""

    def __init__(
        self,
        hold_off: Callable[[Key, int], float] | None,
        falls: dict[Key, int] | None = None,
        lag: TurnLag | None = None,
        clock: Clock = CLOCK,
    ) -> None:
        self.allowed: dict[Key, int] = {}
        self._turn: dict[Key, float] = {}  # this drain's turn at the budget's latest rise
        self._measured: dict[Key, bool] = {}  # whether that turn was drawn from a lag the drain measured
        self._hold_off = hold_off
        self._falls = falls
        self._lag = lag
        self._clock = clock
        self.rose_at: float | None = None

    def see(self, key: Key, allowed: int) -> None:
        before = self.allowed.get(key)
        if allowed > 0 and (before or 0) <= 0:
            self.rose_at = self._clock.mono()
        if self._falls is not None and before is not None and allowed < before:
            self._falls[key] = self._falls.get(key, 0) + before - allowed
        self.allowed[key] = allowed
        if allowed <= 0:
            self._turn.pop(key, None)  # another drain took the rise first, or it fell back: wait for the next
        elif key not in self._turn:
            self._measured[key] = self._lag is None or self._lag.measured
            hold_off = self._hold_off(key, allowed) if self._hold_off is not None else 0.0
            self._turn[key] = self._clock.mono() + hold_off
        elif before is not None and before != allowed:
            measured = self._measured.get(key, True)
            self._turn[key] = turn_at_level(self._turn[key], self._clock.mono(), before, allowed, measured=measured)

    @property
    def next(self) -> float | None:
        return min(self._turn.values(), default=None)

    def due(self, now: float) -> dict[Key, int]:
        """The budgets whose turn has come, as allowing; every other one as allowing nothing (not yet this drain's)."""
        return {k: (n if self._turn.get(k, now + 1) <= now else 0) for k, n in self.allowed.items()}

"""Budget turns, the rules (pure): drains sharing a PodDisruptionBudget take its rises in turn instead of all at once.

When a budget rises (allows a disruption again), every drain waiting on it draws a hold-off and evicts at the end of
it (its turn), unless its watch saw the budget fall first: another drain's turn came sooner and took the disruption.
The hold-offs are drawn in slots: a slot spans a couple of lags (how late a budget's fall reaches a drain, which each
drain measures on its own evictions: ``TurnLag``), and a window holds one slot for as many drains as may want the
budget, fewer when it allows several at once (``turns_per_slot``). In a storm the first wave waits for its turns too,
before any refusal (``first_wave_turns``). The drain's state of its turns: engine/budget_turns.py; the wait on the
budgets' watch: engine/budget_wait.py; the words: docs/glossary.md.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drain_orchestrator.drain.selector import selecting

Key = tuple[str, str]  # (namespace, PodDisruptionBudget name)

# ---- the lag, and the slot drawn from it ------------------------------------------------------------------------

# the slot spans this many lags: turns drawn in a window of slots collide when two fall within one lag, and every
# slot more is waited at each of a budget's rises
LAG_SLOTS = 2.0
# weight of a new sample in the running estimate (a burst of slow answers moves it, one outlier does not set it)
SAMPLE_WEIGHT = 0.3
# a fall seen longer than this after the eviction was not its answer (the watch was closed in between)
SAMPLE_MAX_SECONDS = 10.0


@dataclass
class TurnLag:
    """How late a budget's fall reaches this drain: its evictions of budget-admitted pods, timed until its watch of
    the budget shows the fall. A drain whose turn comes before another drain's eviction has reached its watch
    evicts too and is refused, so a slot shorter than the lag costs refusals and a longer one costs time at every
    rise. The lag is the apiserver's (short on an idle control plane, several times longer on a busy one), so each
    drain measures it itself and sizes its slot from it."""

    lag: float | None = None  # seconds, the running estimate; None until a first sample
    samples: int = 0
    _sent: dict[Key, float] = field(default_factory=dict)  # budget → monotonic time of an eviction not yet seen
    _level: dict[Key, int] = field(default_factory=dict)  # budget → disruptionsAllowed as the watch last showed it

    @property
    def measured(self) -> bool:
        """A lag was measured: the slot follows the control plane, not the configured guess."""
        return self.lag is not None

    def sent(self, key: Key, at: float) -> None:
        """An eviction of a pod the budget ``key`` admitted went through; it was sent at ``at`` (monotonic)."""
        self._sent.setdefault(key, at)

    def level(self, key: Key, allowed: int) -> None:
        """The budget as a LIST or an earlier wait showed it (no sample: when it got there is not known)."""
        self._level[key] = allowed

    def seen(self, key: Key, allowed: int, at: float) -> None:
        """The watch showed the budget at ``allowed``, an event that arrived at ``at`` (monotonic): the first fall
        after this drain's eviction is that eviction reaching the watch."""
        before = self._level.get(key)
        self._level[key] = allowed
        sent = self._sent.get(key)
        if sent is None or before is None or allowed >= before or at < sent:
            return
        del self._sent[key]
        if at - sent <= SAMPLE_MAX_SECONDS:
            sample = at - sent
            self.lag = sample if self.lag is None else self.lag + SAMPLE_WEIGHT * (sample - self.lag)
            self.samples += 1

    def restart(self) -> None:
        """The watch starts over from a LIST: evictions it may have missed the answer of give no sample."""
        self._sent.clear()

    def slot(self, floor: float, cap: float) -> float:
        """The turn slot: LAG_SLOTS lags, at least ``floor`` (the configured slot, also the slot before a first
        sample), at most ``cap``."""
        if self.lag is None:
            return floor
        return min(cap, max(floor, LAG_SLOTS * self.lag))


# ---- the hold-off drawn at a rise -------------------------------------------------------------------------------

# widest window a budget's turns are drawn in, one slot for each drain still wanting it (to the power of two above):
# a storm's many drains need more room than a lost race's backoff cap (DrainOptions.budget_jitter_cap), or their turns
# fall closer together than a budget's fall takes to reach them
TURN_WINDOW_MAX_SECONDS = 30.0
# the share of a budget's disruptions, less one, that a slot holds turns for (turns_per_slot): less than all of them,
# as a turn whose fall the other drains have not seen yet still counts against what the budget shows
SLOT_SHARE = 0.75


def contention_jitter(refused: int, slot: float, cap: float, rng: random.Random | None = None) -> float:
    """Pause between a PDB's budget rising and retrying the pods it blocks.

    ``refused``: how many retries in a row the budget refused right after allowing them (other drains took the
    disruption first). None yet, no pause: a drain alone is not slowed. Then binary exponential backoff, as on
    a shared Ethernet: uniform(0, min(cap, slot * 2^(refused-1))), so concurrent drains spread their retries
    instead of all firing at the instant the budget rises."""
    if refused <= 0:
        return 0.0
    r = rng or random
    return r.uniform(0.0, min(cap, slot * 2 ** min(refused - 1, 16)))


def turn_hold_off(
    lost: int, wanting: int, slot: float, cap: float, turns_cap: float, rng: random.Random | None = None
) -> float:
    """Pause drawn at a budget's rise before this drain's turn at it. ``lost``: races lost in a row (a backoff, at
    most ``cap``); ``wanting``: the races-lost count whose window spans the drains still wanting the budget
    (``contention_of``), at most ``turns_cap``: a storm's many drains need a window wider than a lost race's backoff,
    one slot each, or their turns fall closer together than a budget's fall takes to reach them."""
    limit = max(cap, turns_cap) if wanting > lost else cap
    return contention_jitter(max(1, lost, wanting), slot, limit, rng)


def contention_of(draining: int, per_slot: float = 1.0) -> int:
    """The races-lost count whose hold-off window (``contention_jitter``: slot * 2^(n-1)) spans one slot per
    ``per_slot`` draining nodes (``turns_per_slot``), so that the drains' turns at a budget fall apart: no more within
    a slot than the budget admits."""
    return 1 + math.ceil(math.log2(max(1, math.ceil(max(1, draining) / per_slot))))


def turns_per_slot(allowed: int, *, measured: bool = True) -> float:
    """How many drains' turns one slot holds at a budget allowing ``allowed``: three quarters of all but one of them,
    and at least half a turn (at a budget allowing one). The one left is for a turn that came but whose fall the other
    drains have not seen yet (a slot spans that lag twice); with one allowed, a turn a slot would lose a quarter of
    the races. One turn a slot whatever the budget allows would hold a budget allowing 5 at the pace of one allowing
    1, unused while drains wait. Only a slot sized from a lag the drain ``measured`` holds several: the configured
    slot is a guess, and at a storm's start, before any drain has evicted, the apiserver is at its busiest and its
    lag longest."""
    if not measured:
        return 1.0
    return max(0.5, SLOT_SHARE * (allowed - 1.0))


def turn_at_level(turn: float, now: float, before: int, allowed: int, *, measured: bool = True) -> float:
    """A turn not yet come (monotonic ``turn``) when its budget moves from allowing ``before`` to ``allowed`` (both
    above 0): the time left scales as the turns a slot holds (turns_per_slot), so the drains' turns stay as dense
    as the budget admits now: a budget that falls keeps them apart as if drawn at its new level, one that rises
    brings them nearer. A turn drawn before the drain ``measured`` its lag was drawn one a slot at any level, and
    stays where it was drawn."""
    if turn <= now or before <= 0 or allowed <= 0:
        return turn
    return now + (turn - now) * turns_per_slot(before, measured=measured) / turns_per_slot(allowed, measured=measured)


# ---- what a turn admits ----------------------------------------------------------------------------------------


def budget_share(blocked: Sequence[tuple[str, Sequence[Key]]], allowed: Mapping[Key, int]) -> list[str]:
    """Which PDB-blocked pods to retry now: ``blocked`` is (pod, its PDBs) in retry order, ``allowed`` each PDB's
    ``disruptionsAllowed`` at its turn. A PDB that allows n disruptions gets at most n retries, so a rise of the
    budget costs evictions in proportion to what it allows, not one per pod waiting on it."""
    left = dict(allowed)
    out = []
    for pod, pdbs in blocked:
        if pdbs and all(left.get(p, 0) > 0 for p in pdbs):
            for p in pdbs:
                left[p] -= 1
            out.append(pod)
    return out


# ---- the first wave --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """A pod of the first wave that waits for its turn at its budget."""

    namespace: str
    budget: str
    allowed: int  # the budget's disruptionsAllowed as listed


def first_wave_turns(
    pods: Sequence[tuple[str, str, Mapping[str, str]]], pdbs: Sequence[Mapping[str, Any]], draining: int
) -> dict[str, Turn]:
    """Which pods' first eviction waits for a turn at their budget, in a storm. Every drain of a storm evicting all
    its pods at once is refused for most of them (50 drains each sending one pod of a budget that allows 5: 45
    refusals before anyone waits). A pod selected by exactly one budget that allows fewer disruptions than there are
    nodes draining (each may want one) waits on that budget from the start instead, as if refused once. A budget with
    room for every draining node, a drain alone, and a pod under several budgets (the eviction API never evicts it)
    are left as they were: evicted at once.

    ``pods``: (identity, namespace, labels) of the pods about to be evicted; ``pdbs``: the budgets of their
    namespaces as listed; ``draining``: nodes being drained now, this one included. Identity → its budget, for the
    pods that wait for a turn."""
    if draining < 2:
        return {}
    allowed = {key_of(p): int((p.get("status") or {}).get("disruptionsAllowed") or 0) for p in pdbs}
    out = {}
    for ident, namespace, labels in pods:
        names = selecting(list(pdbs), namespace, labels)
        if len(names) != 1:
            continue
        n = allowed.get((namespace, names[0]), 0)
        if n < draining:
            out[ident] = Turn(namespace, names[0], n)
    return out


def key_of(pdb: Mapping[str, Any]) -> Key:
    """A listed budget's (namespace, name)."""
    meta = pdb.get("metadata") or {}
    return (meta.get("namespace", ""), meta.get("name", ""))

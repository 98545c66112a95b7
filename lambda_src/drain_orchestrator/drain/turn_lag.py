"""How late a budget's fall reaches a drain, measured by the drain itself, and the turn slot drawn from it (pure).

Drains sharing a PodDisruptionBudget take its rises in turn: each draws a hold-off in slots (drain/plan.py
contention_jitter) and evicts at its turn unless its watch saw the budget fall first. A drain whose turn comes
before another drain's eviction has reached its watch evicts too and is refused, so a slot shorter than that lag
costs refusals and a longer one costs time at every wave. The lag is the apiserver's: short on an idle control
plane, several times longer on a busy one. Each drain measures it on its own evictions (sent → its watch of the
budget showing the fall) and sizes its slot from it, so the slot follows the control plane it runs against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Key = tuple[str, str]  # (namespace, PodDisruptionBudget name)

# the slot spans this many lags: turns drawn in a window of slots collide when two fall within one lag, and every
# slot more is waited at each of a budget's waves. Measured on the bed (docs/benchmarks.md): 2 lags kept refusals
# near 0.05 a pod where the fixed 0.2 s slot had 0.15 against a busy control plane, 3 brought the storm's time up
LAG_SLOTS = 2.0
# weight of a new sample in the running estimate (a burst of slow answers moves it, one outlier does not set it)
SAMPLE_WEIGHT = 0.3
# a fall seen longer than this after the eviction was not its answer (the watch was closed in between)
SAMPLE_MAX_SECONDS = 10.0


@dataclass
class TurnLag:
    """The lag this drain measured: its evictions of budget-admitted pods, and the falls its budget watch saw."""

    lag: float | None = None  # seconds, the running estimate; None until a first sample
    samples: int = 0
    _sent: dict[Key, float] = field(default_factory=dict)  # budget → monotonic time of an eviction not yet seen
    _level: dict[Key, int] = field(default_factory=dict)  # budget → disruptionsAllowed as the watch last showed it

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

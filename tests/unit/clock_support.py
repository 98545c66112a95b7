"""A clock for the drain engine's parts that moves only when told (engine/clock.py)."""

from __future__ import annotations

from drain_orchestrator.engine.clock import Clock


class FakeClock(Clock):
    def __init__(self, mono: float = 1000.0, wall: float = 1_700_000_000.0) -> None:
        self._mono, self._wall = mono, wall

    def mono(self) -> float:
        return self._mono

    def wall(self) -> float:
        return self._wall

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        self._mono += seconds
        self._wall += seconds

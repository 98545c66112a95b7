"""The drain engine's clock, and its one convention: every time the engine keeps is on the monotonic clock.

A retry time, a turn, a pod's expected end, the cordon's time: all ``mono()`` seconds, so a wall clock stepped by NTP
moves none of them. The wall clock (``wall()``) is read only where the engine meets times given on it: the deadline
(an epoch in DrainOptions), the apiserver's timestamps (a pod's deletionTimestamp, the cordon's started-at) and what
the engine hands out (``HoldCheck.wake_at``); ``mono_at`` and ``wall_at`` convert at that border.
"""

from __future__ import annotations

import time


class Clock:
    def mono(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def mono_at(self, epoch: float) -> float:
        """An epoch (a deadline, an apiserver timestamp) on the monotonic clock."""
        return self.mono() + (epoch - self.wall())

    def wall_at(self, mono: float) -> float:
        """A monotonic time as an epoch, for what leaves the engine."""
        return self.wall() + (mono - self.mono())


CLOCK = Clock()

"""What a test is expected to cost, from ``tests/durations.json`` (``make test-durations`` writes it from a run's
measurements, tests/timings.py): its wall time, by which tests/scheduling.py starts the longest first, and its CPU,
by which tests/admission.py lets a test that mostly waits start while the cores are busy.

A test the file does not know yet (a new one) costs its file's median; in a new file, ``DEFAULT``.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

DURATIONS = Path(__file__).resolve().parent / "durations.json"


@dataclass(frozen=True)
class Cost:
    wall: float  # seconds from the start of its setup to the end of its teardown
    cpu: float  # CPU seconds of its pytest process tree and its worker's bed

    @property
    def cores(self) -> float:
        """The share of a core it keeps busy on average."""
        return self.cpu / max(self.wall, 0.1)


DEFAULT = Cost(wall=5.0, cpu=2.5)  # a short drain on the bed


class Expected:
    def __init__(self, path: Path = DURATIONS) -> None:
        try:
            raw: dict[str, list[float]] = json.loads(path.read_text())
        except FileNotFoundError:
            raw = {}
        self.known = {nodeid: Cost(*figures) for nodeid, figures in raw.items()}
        by_file: dict[str, list[Cost]] = {}
        for nodeid, cost in self.known.items():
            by_file.setdefault(nodeid.split("::", 1)[0], []).append(cost)
        self.medians = {
            f: Cost(statistics.median(c.wall for c in costs), statistics.median(c.cpu for c in costs))
            for f, costs in by_file.items()
        }

    def __call__(self, nodeid: str) -> Cost:
        return self.known.get(nodeid) or self.medians.get(nodeid.split("::", 1)[0], DEFAULT)

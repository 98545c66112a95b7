"""CPU figures from /proc for the suite's own bookkeeping (tests/timings.py, tests/admission.py): a process's CPU,
its descendants, the whole machine's."""

from __future__ import annotations

import os
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """CPU seconds of a process and of the children it has waited for (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    # after the command: state is field 3, utime 14, stime 15, cutime 16, cstime 17 (1-based, proc(5))
    return sum(int(x) for x in fields[11:15]) / _TICK


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = [int(x) for x in children.read_text().split()]
            except OSError:
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest time is already counted in user
    return (total - idle) / _TICK, total / _TICK

"""How many of a run's tests run at once: as many as the cores always, more while the machine has idle CPU.

`make test` runs more workers than cores because most tests wait (on the apiserver, on wall-clock outages) rather
than compute. But when the cores are busy (CPU-heavy tests at once, or other work on the machine), each further test
would only make every running one slower, and a test that bounds a duration would fail for it. So before a test
starts (its fixtures included), its worker takes a slot: one of the first ``cores`` slots at once if one is free;
otherwise one more only after the machine's CPU was at least ``ADMIT_IDLE`` idle over the last ``SAMPLE_S``,
measured by one waiting worker at a time (so a burst of idle time admits one test, whose load the next measurement
then sees). The time a test waited is reported as its ``queued`` seconds (tests/timings.py), not in its wall time
or its timeout.

Slots are lock files in ``DRAIN_TEST_SLOTS`` (build/run-tests.sh gives its two pytest runs one directory, so they
share the cores; ``DRAIN_TEST_SLOTS_COUNT``: both runs' workers), else in the xdist run's own temporary directory; a
single pytest process takes no slot.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import IO

import pytest

ADMIT_IDLE = 0.3  # the share of the machine's CPU that must have been idle to start one more test than cores
SAMPLE_S = 1.0
SLOTS_VARIABLE = "DRAIN_TEST_SLOTS"
COUNT_VARIABLE = "DRAIN_TEST_SLOTS_COUNT"  # the workers of every run sharing the directory
queued_key = pytest.StashKey[float]()


def _idle_and_total() -> tuple[int, int]:
    values = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return values[3] + values[4], sum(values[:8])


def _idle_share(seconds: float) -> float:
    idle0, total0 = _idle_and_total()
    time.sleep(seconds)
    idle1, total1 = _idle_and_total()
    return (idle1 - idle0) / max(1, total1 - total0)


def _try_lock(path: Path) -> IO[str] | None:
    f = path.open("a")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    return f


class Slots:
    def __init__(
        self, directory: Path, count: int, cores: int, idle_share: Callable[[float], float] = _idle_share
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.idle_share = idle_share
        self.free_for_all = [directory / f"slot-{i}" for i in range(cores)]
        self.on_idle = [directory / f"slot-{i}" for i in range(cores, max(cores, count))]
        self.admission = directory / "admission"

    @contextlib.contextmanager
    def held(self) -> Iterator[float]:
        """Hold a slot while the body runs; yields the seconds waited for it."""
        started = time.monotonic()
        slot = self._take()
        try:
            yield time.monotonic() - started
        finally:
            slot.close()  # releases the lock

    def _take(self) -> IO[str]:
        while True:
            for path in self.free_for_all:
                if (slot := _try_lock(path)) is not None:
                    return slot
            gate = _try_lock(self.admission)
            if gate is None:  # another worker is measuring: wait for its verdict, then look again
                time.sleep(0.2)
                continue
            try:
                if self.idle_share(SAMPLE_S) >= ADMIT_IDLE:
                    for path in self.on_idle:
                        if (slot := _try_lock(path)) is not None:
                            return slot
            finally:
                gate.close()
            time.sleep(0.2)


_slots_key = pytest.StashKey[Slots | None]()


def _slots(config: pytest.Config) -> Slots | None:
    if _slots_key not in config.stash:
        workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
        directory = os.environ.get(SLOTS_VARIABLE)
        cores = os.cpu_count() or 1
        if workers is None:
            config.stash[_slots_key] = None
        elif directory:  # two runs side by side (build/run-tests.sh): slots for both runs' workers
            config.stash[_slots_key] = Slots(Path(directory), int(os.environ.get(COUNT_VARIABLE, workers)), cores)
        else:
            shared = config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]  # the run's
            config.stash[_slots_key] = Slots(shared / "slots", int(workers), cores)
    return config.stash[_slots_key]


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: the wait is outside the test's timeout
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None]:
    slots = _slots(item.config)
    if slots is None:
        yield
        return
    with slots.held() as waited:
        item.stash[queued_key] = waited
        yield

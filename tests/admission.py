"""How many of a run's tests run at once: all its workers' while they mostly wait, no more CPU-heavy ones than the
cores have room for.

`make test` runs more workers than cores because most of the suite's time is tests waiting (on the apiserver, on
wall-clock outages), not computing. But a CPU-heavy test (a bed start, a CDK synth, a storm) started while the cores
are busy only makes every running test slower, and one that bounds a duration fails for it. So before a test
starts (its fixtures included) its worker takes a slot:

- a test expected to mostly wait or to cost little CPU (tests/expected.py: under ``LIGHT_CORES`` of a core on
  average, or under ``LIGHT_CPU_S`` CPU-seconds in all) takes any free slot at once;
- a CPU-heavy one, and a worker's first test (it starts the worker's bed and does the imports), waits its turn in
  order of arrival, then takes one of the first ``cores`` slots, or one more once the machine's CPU was at least
  ``ADMIT_IDLE`` idle over ``SAMPLE_S`` (the first in line looks, so an idle moment admits one test, whose load the
  next look sees).

The time a test waited is reported as its ``queued`` seconds (tests/timings.py), outside its wall time and its
timeout. Slots are lock files in ``DRAIN_TEST_SLOTS`` (build/run-tests.sh gives its two pytest runs one directory, so
they share the cores; ``DRAIN_TEST_SLOTS_COUNT``: both runs' workers), else in the xdist run's own temporary
directory; a single pytest process takes no slot.
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

from tests.expected import Expected
from tests.procstat import machine_cpu

LIGHT_CORES = 0.2
LIGHT_CPU_S = 2.0
ADMIT_IDLE = 0.3
SAMPLE_S = 1.0
SLOTS_VARIABLE = "DRAIN_TEST_SLOTS"
COUNT_VARIABLE = "DRAIN_TEST_SLOTS_COUNT"  # the workers of every run sharing the directory
queued_key = pytest.StashKey[float]()


def idle_share(seconds: float = SAMPLE_S) -> float:
    """The share of the machine's CPU idle over the next ``seconds``."""
    busy0, total0 = machine_cpu()
    time.sleep(seconds)
    busy1, total1 = machine_cpu()
    return 1 - (busy1 - busy0) / max(1e-9, total1 - total0)


def _try_lock(path: Path) -> IO[str] | None:
    f = path.open("a")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    return f


class Slots:
    def __init__(self, directory: Path, count: int, cores: int, idle: Callable[[], float] = idle_share) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.idle = idle
        self.free_for_all = [directory / f"slot-{i}" for i in range(cores)]
        self.on_room = [directory / f"slot-{i}" for i in range(cores, max(cores, count))]

    @contextlib.contextmanager
    def held(self, light: bool = False) -> Iterator[float]:
        """Hold a slot while the body runs; yields the seconds waited for it."""
        started = time.monotonic()
        slot = self._take(light)
        try:
            yield time.monotonic() - started
        finally:
            slot.close()  # releases the lock

    def _take(self, light: bool) -> IO[str]:
        if light:  # the slots beyond the cores first: the first ones are the CPU-heavy tests'
            for path in self.on_room + self.free_for_all:
                if (slot := _try_lock(path)) is not None:
                    return slot
        # CPU-heavy tests wait their turn in order of arrival: a ticket, held locked while it waits
        ticket, mine = self._ticket()
        try:
            while True:
                if self._first_in_line(mine):
                    for path in self.free_for_all:
                        if (slot := _try_lock(path)) is not None:
                            return slot
                    if self.idle() >= ADMIT_IDLE:
                        for path in self.on_room:
                            if (slot := _try_lock(path)) is not None:
                                return slot
                time.sleep(0.2)
        finally:
            mine.unlink(missing_ok=True)
            ticket.close()

    def _ticket(self) -> tuple[IO[str], Path]:
        """A place in line, locked before it is seen: written under another name and renamed once locked, so a
        waiter looking for stale tickets never takes a new one for a gone worker's."""
        name = f"{time.time_ns():020d}-{os.getpid()}"
        ticket = _try_lock(self.directory / f"new-{name}")
        assert ticket is not None  # a name no one else has
        mine = self.directory / f"wait-{name}"
        os.rename(self.directory / f"new-{name}", mine)
        return ticket, mine

    def _first_in_line(self, mine: Path) -> bool:
        for waiting in sorted(self.directory.glob("wait-*")):
            if waiting == mine:
                return True
            if (stale := _try_lock(waiting)) is not None:  # its worker is gone without taking it back
                waiting.unlink(missing_ok=True)
                stale.close()
                continue
            return False
        return False


_slots_key = pytest.StashKey[tuple[Slots, Expected] | None]()
_first_key = pytest.StashKey[bool]()


def _slots(config: pytest.Config) -> tuple[Slots, Expected] | None:
    if _slots_key not in config.stash:
        workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
        directory = os.environ.get(SLOTS_VARIABLE)
        cores = os.cpu_count() or 1
        if workers is None:
            config.stash[_slots_key] = None
        elif directory:  # two runs side by side (build/run-tests.sh): slots for both runs' workers
            count = int(os.environ.get(COUNT_VARIABLE, workers))
            config.stash[_slots_key] = (Slots(Path(directory), count, cores), Expected())
        else:
            shared = config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]  # the run's
            config.stash[_slots_key] = (Slots(shared / "slots", int(workers), cores), Expected())
    return config.stash[_slots_key]


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: the wait is outside the test's timeout
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None]:
    found = _slots(item.config)
    if found is None:
        yield
        return
    slots, expected = found
    cost = expected(item.nodeid)
    first = _first_key not in item.config.stash  # it starts the worker's bed and imports: CPU-heavy whatever it is
    item.config.stash[_first_key] = False
    light = not first and (cost.cores < LIGHT_CORES or cost.cpu < LIGHT_CPU_S)
    with slots.held(light=light) as waited:
        item.stash[queued_key] = waited
        yield

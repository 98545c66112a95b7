"""Where a test run's time and CPU go, printed at the end of every run (so CI logs show a file that got slower) and
written in full to a JSON file.

Per test: wall time from the start of its setup to the end of its teardown, the CPU of the pytest process that ran
it and of its other children (a CDK synth, a Lambda runtime), the CPU of its worker's bed, and how long it queued
for a slot before it started (tests/admission.py). Per run: wall, how busy the machine's cores were (all processes,
from /proc/stat) and how much of that was this run's, the load average at the start and at the end, and for each
worker when its last test ended (the tail a badly ordered run leaves).

With pytest-xdist each worker measures its own tests and sends the figures with the test's report; the controller
adds them up. Options: ``--timings-json PATH`` (default ``.local/test-times.json``), ``--timings-files N`` (rows of
the table, default 25; 0 for none).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.admission import queued_key
from tests.procstat import descendants, machine_cpu, process_cpu

REPO = Path(__file__).resolve().parents[1]
PROPERTY = "timings"

# the processes (by pid) whose CPU counts as this pytest process's bed; set by the bed fixtures
_bed_pids: list[Callable[[], Iterable[int]]] = []


def watch_bed(pids: Callable[[], Iterable[int]]) -> None:
    """Count the CPU of these processes (read again at every test: a restarted component has a new pid) as this
    pytest process's bed."""
    _bed_pids.append(pids)


def _tree_cpu() -> float:
    """CPU seconds of this process, of the children it has waited for and of every live descendant (with the
    children they waited for): its difference over a test is the CPU that test's process tree spent, whenever a
    child is reaped (a bed component stopped by a later test, a CDK synth waited for at once)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = sum(process_cpu(pid) for pid in descendants(os.getpid()))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + live


def _bed_cpu() -> dict[int, float]:
    return {pid: process_cpu(pid) for source in _bed_pids for pid in source()}


@dataclass
class _Started:
    wall: float
    at: float
    tree: float
    bed: dict[int, float]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("timings", "wall time and CPU by test and by file")
    group.addoption("--timings-json", default=str(REPO / ".local" / "test-times.json"), help="full report (JSON)")
    group.addoption("--timings-files", type=int, default=25, help="files shown in the summary table (0: none)")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None]:
    item.stash[_started_key] = _Started(time.monotonic(), time.time(), _tree_cpu(), _bed_cpu())
    yield


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None]:
    started = item.stash.get(_started_key, None)
    if call.when == "teardown" and started is not None:
        bed_now = _bed_cpu()
        tree = _tree_cpu() - started.tree
        # a bed process gone by now (stopped, reaped) counts with the rest of the tree
        bed = sum(cpu - started.bed.get(pid, 0.0) for pid, cpu in bed_now.items() if cpu)
        figures = {
            "wall": round(time.monotonic() - started.wall, 3),
            "start": round(started.at, 3),
            "cpu_pytest": round(max(0.0, tree - bed), 3),
            "cpu_bed": round(bed, 3),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "queued": round(item.stash.get(queued_key, 0.0), 3),
        }
        item.user_properties.append((PROPERTY, figures))
    yield


_started_key = pytest.StashKey[_Started]()


@dataclass
class _FileTotals:
    tests: int = 0
    wall: float = 0.0
    cpu_pytest: float = 0.0
    cpu_bed: float = 0.0
    queued: float = 0.0


class Collector:
    """On the controller (or the only process): the figures of every test, the machine's at the start."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tests: dict[str, dict[str, Any]] = {}
        self.t0 = time.monotonic()
        self.at0 = time.time()
        self.machine0 = machine_cpu()
        self.load0 = os.getloadavg()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == PROPERTY:
                self.tests[report.nodeid] = dict(value)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.tests:
            return
        wall = time.monotonic() - self.t0
        busy1, total1 = machine_cpu()
        busy = busy1 - self.machine0[0]
        capacity = total1 - self.machine0[1]
        cores = os.cpu_count() or 1
        files: dict[str, _FileTotals] = defaultdict(_FileTotals)
        workers: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # busy seconds, end (since start)
        for nodeid, t in self.tests.items():
            f = files[nodeid.split("::", 1)[0]]
            f.tests += 1
            f.wall += t["wall"]
            f.cpu_pytest += t["cpu_pytest"]
            f.cpu_bed += t["cpu_bed"]
            f.queued += t.get("queued", 0.0)
            w = workers[t["worker"]]
            w[0] += t["wall"]
            w[1] = max(w[1], t["start"] + t["wall"] - self.at0)
        ours = sum(f.cpu_pytest + f.cpu_bed for f in files.values())
        tr = terminalreporter
        rows = self.config.getoption("--timings-files")
        if rows:
            tr.write_sep("=", f"wall time and CPU by file (the {min(rows, len(files))} longest of {len(files)})")
            tr.write_line(f"{'file':<58} {'tests':>5} {'wall s':>8} {'cpu s':>7} {'bed cpu s':>9} {'queued s':>8}")
            for name, f in sorted(files.items(), key=lambda kv: -kv[1].wall)[:rows]:
                tr.write_line(
                    f"{name:<58} {f.tests:>5} {f.wall:>8.1f} {f.cpu_pytest:>7.1f} {f.cpu_bed:>9.1f} {f.queued:>8.1f}"
                )
        tr.write_sep("-", "run")
        tr.write_line(
            f"wall {wall:.0f} s; {len(self.tests)} tests, {sum(f.wall for f in files.values()):.0f} s of test time "
            f"on {len(workers)} worker(s), {sum(f.queued for f in files.values()):.0f} s queued for a slot "
            "(tests/admission.py)"
        )
        tr.write_line(
            f"machine: {busy / wall:.2f} of {cores} cores busy on average ({busy / capacity:.0%}); this run's "
            f"processes {ours / wall:.2f} cores, others {max(0.0, busy - ours) / wall:.2f}; load average "
            f"{self.load0[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        )
        if len(workers) > 1:
            tr.write_line(
                "workers (test time / last test ended, s): "
                + ", ".join(f"{w} {b:.0f}/{e:.0f}" for w, (b, e) in sorted(workers.items()))
            )
        out = Path(self.config.getoption("--timings-json"))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(
                {
                    "wall": round(wall, 1),
                    "machine_busy_cores": round(busy / wall, 2),
                    "run_cores": round(ours / wall, 2),
                    "cores": cores,
                    "load_start": self.load0[0],
                    "load_end": os.getloadavg()[0],
                    "tests": self.tests,
                },
                indent=1,
            )
        )
        tr.write_line(f"all tests' figures: {out}")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, or a run without workers
        config.pluginmanager.register(Collector(config), "timings-collector")


def update_durations(measured: Path, durations: Path) -> int:
    """Merge a run's measured costs (``--timings-json``) into the file the scheduler and the slots read
    (tests/expected.py): per test, [wall seconds, CPU seconds]; tests the run did not measure keep their entry.
    Returns how many were written."""
    tests = json.loads(measured.read_text())["tests"]
    try:
        known: dict[str, list[float]] = json.loads(durations.read_text())
    except FileNotFoundError:
        known = {}
    known.update(
        {nodeid: [round(t["wall"], 1), round(t["cpu_pytest"] + t["cpu_bed"], 1)] for nodeid, t in tests.items()}
    )
    durations.write_text(
        "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(known.items())) + "\n}\n"
    )
    return len(tests)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.timings", description=update_durations.__doc__)
    parser.add_argument("measured", type=Path, nargs="*", default=[REPO / ".local" / "test-times.json"])
    parser.add_argument("--durations", type=Path, default=REPO / "tests" / "durations.json")
    args = parser.parse_args()
    for measured in args.measured:
        if measured.exists():
            print(f"{update_durations(measured, args.durations)} tests' walls from {measured} in {args.durations}")

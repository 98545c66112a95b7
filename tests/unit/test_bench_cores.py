"""bench_nth --split-cores (bench/cpu.py): the control plane on CPUs of its own, everything else on the others, on
real processes of this machine (their affinity read back from /proc), and put back as it was afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench import cpu, nth_report

REPO = Path(__file__).resolve().parents[2]
# a child with a second thread, which must be pinned too: a Go or Python process serves from many threads
THREADED = (
    "import threading, time; threading.Thread(target=time.sleep, args=(60,), daemon=True).start(); time.sleep(60)"
)


def _threads_allowed(pid: int) -> list[set[int]]:
    """Each thread's CPUs, as /proc lists them."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        line = next(ln for ln in (task / "status").read_text().splitlines() if ln.startswith("Cpus_allowed_list:"))
        cpus: set[int] = set()
        for part in line.split(":", 1)[1].strip().split(","):
            lo, _, hi = part.partition("-")
            cpus |= set(range(int(lo), int(hi or lo) + 1))
        out.append(cpus)
    return out


@pytest.fixture
def children() -> Iterator[list[int]]:
    procs = [subprocess.Popen([sys.executable, "-c", THREADED]) for _ in range(2)]
    try:
        for p in procs:  # both threads started
            deadline = time.monotonic() + 10
            while len(list(Path(f"/proc/{p.pid}/task").iterdir())) < 2:
                assert time.monotonic() < deadline, "the child's second thread did not start"
                time.sleep(0.01)
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _two_cpus() -> set[int]:
    mine = os.sched_getaffinity(0)
    if len(mine) < 2:
        pytest.fail(f"splitting the cores needs 2 CPUs; this test process may use {sorted(mine)}")
    return mine


def test_the_control_plane_gets_the_upper_half_of_the_cpus() -> None:
    assert cpu.core_split({1, 0}) == ({1}, {0})
    assert cpu.core_split([3, 0, 2, 1]) == ({2, 3}, {0, 1})
    assert cpu.core_split(range(5)) == ({2, 3, 4}, {0, 1})
    with pytest.raises(ValueError, match="at least 2 CPUs, this process may use 1"):
        cpu.core_split({0})


def test_pin_moves_every_thread_of_a_process(children: list[int]) -> None:
    everything = _two_cpus()
    last = max(everything)
    cpu.pin(children[0], {last})
    assert _threads_allowed(children[0]) == [{last}, {last}]
    assert _threads_allowed(children[1]) == [everything, everything]  # another process: untouched


def test_within_the_split_the_control_plane_and_the_rest_run_apart_and_after_it_as_before(
    children: list[int],
) -> None:
    everything = _two_cpus()
    plane, rest = cpu.core_split(everything)
    apiserver, emulator = children
    with cpu.cores_split([("kube-apiserver", apiserver), ("awsemu", emulator)]) as cores:
        assert cores == {"control_plane": sorted(plane), "rest": sorted(rest)}
        assert _threads_allowed(apiserver) == [set(plane)] * 2
        assert _threads_allowed(emulator) == [set(rest)] * 2  # the AWS emulator stands for AWS: with the contenders
        assert os.sched_getaffinity(0) == rest  # this process: the harness
        started = subprocess.run(
            [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert started.stdout.strip() == str(sorted(rest))  # a contender started meanwhile (NTH) inherits it
    assert os.sched_getaffinity(0) == everything
    assert _threads_allowed(apiserver) == [everything] * 2 and _threads_allowed(emulator) == [everything] * 2


@pytest.mark.parametrize("bench", ["bench.bench_nth", "bench.storm_waves"])
def test_bench_refuses_to_split_one_cpu_before_starting_a_bed(bench: str) -> None:
    done = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-m", bench, "--split-cores"],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --split-cores: splitting the cores needs at least 2 CPUs")
    assert "Traceback" not in done.stderr


def test_the_report_says_which_cpus_ran_what() -> None:
    assert nth_report.cores_line(None) == "CPUs: shared by the control plane, the contenders and the AWS emulator."
    line = nth_report.cores_line({"control_plane": [1], "rest": [0]})
    assert line == (
        "CPUs: the control plane on [1]; the contenders (harness, NTH) and the AWS emulator on [0] (--split-cores)."
    )

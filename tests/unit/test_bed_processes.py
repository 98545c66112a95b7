"""How the bed tells its own processes from others: PIDs wrap and two beds run the same binaries, so only the whole
recorded command line identifies a component; and ending bed processes are collected without taking the exit
status of children other code holds handles for."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from testbed.procs import Proc, pid_alive, reap, started

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)", "bed-a"]


def test_a_process_running_the_same_binary_with_other_arguments_is_not_ours() -> None:
    p = subprocess.Popen(SLEEPER)
    try:
        ours = Proc(name="x", pid=p.pid, argv0=SLEEPER[0], argv=list(SLEEPER))
        another_beds = Proc(name="x", pid=p.pid, argv0=SLEEPER[0], argv=[*SLEEPER[:-1], "bed-b"])
        recorded_before_argv = Proc(name="x", pid=p.pid, argv0=SLEEPER[0])
        assert pid_alive(ours)
        assert not pid_alive(another_beds)
        assert pid_alive(recorded_before_argv)
    finally:
        p.kill()
        p.wait()
    assert not pid_alive(ours)


def test_reaping_the_beds_processes_leaves_other_childrens_exit_status_to_their_handles() -> None:
    bed_process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    started(bed_process)
    other = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
    bed_process.wait()
    _until_ended(other.pid)
    reap()  # must collect the bed's process without waiting for any other child
    assert other.poll() == 7  # a wait for any child would have left the handle to report 0
    assert bed_process.returncode == 3


def _until_ended(pid: int, timeout: float = 10.0) -> None:
    """Wait until ``pid`` is a zombie: ended, its exit status not yet collected."""
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z":
        assert time.monotonic() < deadline, f"process {pid} still running after {timeout} s"
        time.sleep(0.01)

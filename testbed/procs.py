"""The bed's processes: what is recorded of each in ``state.json`` (so any process can stop or restart them), and
how they are found alive, stopped and probed. A PID counts as ours only while its whole command line is the recorded
one: PIDs wrap at 32768 on many hosts, and two beds (two pytest workers) run the same binaries, so a recycled PID
now running another bed's kube-apiserver must not pass for ours (its ports and directories differ)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


class TestbedError(RuntimeError):
    __test__ = False  # not a pytest test class


class ComponentExited(TestbedError):
    """A component died while the bed came up; ``status`` says how (exit code or signal)."""

    def __init__(self, component: str, status: str, message: str) -> None:
        super().__init__(message)
        self.component = component
        self.status = status


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


# Ports chosen are bound later, by a component starting seconds after: a port this process handed out is never
# handed out again (two components of one bed would race for it), and each pytest worker chooses among its own
# residue class, so beds starting side by side in one session never choose the same port.
_HANDED_OUT: set[int] = set()
_WORKER_CLASSES = 16


def free_port() -> int:
    """A free loopback port outside the kernel's ephemeral range. A port the kernel hands out could, while its
    component is stopped for a fault, become some client's local port (the apiserver reconnecting to etcd, say),
    and the component could not bind it again on restart."""
    low, high = _ephemeral_range()
    choices = [p for p in range(10000, 32768) if not low <= p <= high] or list(range(1024, low))
    worker = _worker_index()
    if worker is not None:
        choices = [p for p in choices if p % _WORKER_CLASSES == worker % _WORKER_CLASSES]
    for port in random.sample(choices, min(200, len(choices))):
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            _HANDED_OUT.add(port)
            return port
    raise TestbedError(f"no free loopback port in 10000-32767 outside the ephemeral range {low}-{high}")


def _worker_index() -> int | None:
    """The pytest-xdist worker's number (gw3: 3), None outside a worker."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else None


@dataclass
class Proc:
    name: str
    pid: int
    argv0: str
    # the full command line and extra environment, so a fault test can restart the component exactly as it was
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class State:
    dir: str
    apiserver_port: int
    etcd_port: int
    aws_port: int
    webhook_port: int
    procs: list[Proc] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> State:
        d = json.loads(path.read_text())
        d["procs"] = [Proc(**p) for p in d["procs"]]
        return cls(**d)


# a process just started shows an empty command line until its exec is done (a moment, longer on a loaded host)
EXEC_WAIT_S = 5.0


def _cmdline(pid: int) -> bytes | None:
    """The command line of ``pid``; None when there is no such process or it has ended (a zombie's is empty)."""
    deadline = time.monotonic() + EXEC_WAIT_S
    while True:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            if raw:
                return raw
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            return None
        if state in ("Z", "X") or time.monotonic() > deadline:
            return None
        time.sleep(0.01)


def pid_alive(proc: Proc) -> bool:
    raw = _cmdline(proc.pid)
    if raw is None:
        return False
    cmdline = raw.decode(errors="replace").split("\0")
    if cmdline and cmdline[-1] == "":
        cmdline.pop()  # the kernel ends each argument with NUL
    if proc.argv:
        return cmdline == proc.argv
    return cmdline[:1] == [proc.argv0]  # a state.json written before argv was recorded


def stop_procs(procs: list[Proc], timeout: float = 10) -> None:
    """Stop the processes in reverse start order, each gone before the next is told (controllers before the
    apiserver before etcd): an apiserver told at the same moment as its etcd waits for it for seconds (measured
    7 s; 1.1 s in turn). Whatever is left after ``timeout`` in all is killed."""
    alive = [p for p in procs if pid_alive(p)]
    deadline = time.monotonic() + timeout
    for p in reversed(alive):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
        while time.monotonic() < deadline and pid_alive(p):
            reap()
            time.sleep(0.02)
    for p in alive:
        if pid_alive(p):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
    reap()


# the bed's processes this process started, by PID; reap() collects them through these handles
_started: dict[int, subprocess.Popen[bytes]] = {}


def started(p: subprocess.Popen[bytes]) -> None:
    """Record a bed process this process just started, so reap() collects its exit status."""
    _started[p.pid] = p


def reap() -> None:
    """Collect the exit status of the bed's processes this process started and that have ended (no zombies left).
    Through their own handles only: a wait for any child would also take the status of children other code holds
    handles for (a Lambda runtime, NTH), and that code, never learning its child ended, could later signal a PID the
    kernel has since given to another process."""
    for pid, p in list(_started.items()):
        if p.poll() is not None:
            _started.pop(pid, None)


def http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
        return False

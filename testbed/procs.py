"""The bed's processes: what is recorded of each in ``state.json`` (so any process can stop or restart them), and
how they are found alive, stopped and probed. A PID counts as ours only while its command line is the recorded one,
so a recycled PID is never killed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


class TestbedError(RuntimeError):
    __test__ = False  # not a pytest test class


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def pid_alive(proc: Proc) -> bool:
    try:
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return cmdline == proc.argv0


def stop_procs(procs: list[Proc]) -> None:
    alive = [p for p in procs if pid_alive(p)]
    # reverse start order: controllers before apiserver before etcd
    for p in reversed(alive):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(pid_alive(p) for p in alive):
        reap()
        time.sleep(0.1)
    for p in alive:
        if pid_alive(p):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
    reap()


def reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break


def http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
        return False

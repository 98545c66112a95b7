"""Faults of the test bed's own parts, for tests that prove the product survives them: stop and restart a
control-plane component exactly as it was started (same arguments, ports, certificates, so existing clients
reconnect), and revoke / restore an EKS access entry (the token webhook then denies / authenticates again).

Works on a bed this process started and on one attached through DRAIN_TESTBED_DIR: everything needed (command
lines, extra environment, the access-entry table) is on disk in the bed's directory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

from testbed.bed import Testbed
from testbed.procs import ComponentExited, Proc, TestbedError, http_ok, pid_alive, reap

# components whose only sign of health is staying up (they serve no port: --secure-port=0)
_STAYS_UP_S = 2.0


class BedFaults:
    """Fault switches on one bed. ``stop`` / ``restart`` a component by its name in ``state.json`` (etcd, awsemu,
    kube-apiserver, kube-controller-manager, kube-scheduler, kwok)."""

    def __init__(self, bed: Testbed) -> None:
        self.bed = bed

    # ---- components ---------------------------------------------------------------------------------------------
    def _proc(self, name: str) -> Proc:
        proc = next((p for p in self.bed.state.procs if p.name == name), None)
        if proc is None:
            names = ", ".join(p.name for p in self.bed.state.procs)
            raise TestbedError(f"no component {name!r} in this bed (components: {names})")
        if not proc.argv:
            raise TestbedError(f"{name}: the bed did not record its command line; restart the bed to use faults")
        return proc

    def running(self, name: str) -> bool:
        return pid_alive(self._proc(name))

    @contextlib.contextmanager
    def frozen(self, name: str) -> Iterator[None]:
        """One component stopped in place (SIGSTOP) for the block, then continued (SIGCONT): its connections stay
        open and nothing answers on them, as a stalled apiserver or a frozen etcd."""
        proc = self._proc(name)
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(proc.pid, signal.SIGCONT)

    def stop(self, name: str, *, kill: bool = False, timeout: float = 30) -> None:
        """Stop one component (SIGTERM, or SIGKILL with ``kill``) and wait until it is gone; the rest keep running.
        Its entry stays in state.json so :meth:`restart` (from any process) starts it again as it was."""
        proc = self._proc(name)
        if not pid_alive(proc):
            port = self._port(name)
            if port is not None and _port_open(port):  # a restart could not bind it: say so now, not as "exited"
                raise TestbedError(f"{name}: recorded pid {proc.pid} is not running, yet port {port} still answers")
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while pid_alive(proc):
            reap()
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                deadline = time.monotonic() + 5
            time.sleep(0.05)
        port = self._port(name)
        if port is not None:  # gone means the port refuses connections, not just a dead pid
            _poll(lambda: not _port_open(port), timeout, f"{name} to release port {port}")

    def restart(self, name: str, *, timeout: float = 120) -> float:
        """Start a stopped component with exactly its original arguments and environment (so: same ports, same
        certificates); returns once it is healthy, with the seconds that took."""
        proc = self._proc(name)
        if pid_alive(proc):
            raise TestbedError(f"{name} is still running (pid {proc.pid}); stop it first")
        t0 = time.monotonic()
        self.bed._spawn(name, proc.argv, proc.env)
        try:
            _poll(lambda: self._healthy(name, t0), timeout, f"{name} healthy after restart")
        except ComponentExited:
            # a component dying as it starts, before its first log line, was seen on loaded hosts (as at the bed's
            # start, testbed/bed.py): one more start on the same ports; a second death is the failure
            time.sleep(1.0)
            self.bed._spawn(name, proc.argv, proc.env)
            _poll(lambda: self._healthy(name, t0), timeout, f"{name} healthy after a second restart")
        return time.monotonic() - t0

    def _port(self, name: str) -> int | None:
        s = self.bed.state
        return {
            "etcd": s.etcd_port,
            "kube-apiserver": s.apiserver_port,
            "awsemu": s.aws_port,
        }.get(name)

    def _healthy(self, name: str, spawned_at: float) -> bool:
        proc = self._proc(name)
        if not pid_alive(proc):
            status = self.bed.exit_status(name)
            reap()
            raise ComponentExited(
                name, status, f"{name} exited ({status}) after restart:\n{self.bed.tail_logs(first=name)}"
            )
        if name == "kube-apiserver":
            ctx = ssl.create_default_context(cafile=str(self.bed.dir / "pki" / "ca.crt"))
            return http_ok(f"{self.bed.server}/readyz", ctx)
        if name == "etcd":
            return http_ok(f"http://127.0.0.1:{self.bed.state.etcd_port}/health")
        if name == "awsemu":
            return http_ok(f"{self.bed.aws_endpoint}/_testbed/health")
        return time.monotonic() - spawned_at >= _STAYS_UP_S

    # ---- EKS access entries -------------------------------------------------------------------------------------
    def revoke_access_entry(self, cluster: str, principal_arn: str) -> None:
        """Remove the principal's access entry on ``cluster`` (kept aside on disk): every request it signs is then
        answered 401, as EKS does once an access entry is deleted."""
        data: dict[str, Any] = self.bed._read_entries()
        entries = data.get("clusters", {}).get(cluster, {}).get("entries", {})
        if principal_arn not in entries:
            raise TestbedError(f"no access entry for {principal_arn} on cluster {cluster!r} to revoke")
        data.setdefault("revoked", {}).setdefault(cluster, {})[principal_arn] = entries.pop(principal_arn)
        self.bed._write_entries(data)

    def restore_access_entry(self, cluster: str, principal_arn: str) -> None:
        """Put a revoked access entry back: the principal authenticates again on its next request."""
        data: dict[str, Any] = self.bed._read_entries()
        kept = data.get("revoked", {}).get(cluster, {})
        if principal_arn not in kept:
            raise TestbedError(f"no revoked access entry for {principal_arn} on cluster {cluster!r} to restore")
        entry = kept.pop(principal_arn)
        data["clusters"].setdefault(cluster, {"entries": {}})["entries"][principal_arn] = entry
        self.bed._write_entries(data)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _poll(ok: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise TestbedError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)

"""The local test bed: a real Kubernetes control plane (etcd, kube-apiserver with RBAC and the EKS token webhook,
kube-controller-manager, kube-scheduler) with kwok standing in for kubelets, and the AWS emulator (moto server with
the test bed's extensions). One implementation backs the pytest session fixture, `make cluster-up` /
`make cluster-down`, the demo and the benchmarks.

Everything binds to 127.0.0.1 on free ports; logs stay in ``<state dir>/logs`` for debugging; ``stop()`` kills only
the process groups this bed started (recorded with their command lines in ``state.json``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from testbed import control_plane
from testbed import pki as pki_mod
from testbed.binaries import BinDir, locate_binaries
from testbed.procs import ComponentExited, Proc, State, free_port, pid_alive, started, stop_procs

REPO = Path(__file__).resolve().parents[1]
REGION = "us-east-1"
ACCOUNT_ID = "123456789012"
# a component seen gone (its /proc entry emptied) has its exit status a moment later, once the kernel is done with it
EXIT_STATUS_WAIT_S = 5.0


class Testbed:
    """A running (or attachable) bed. Create with :meth:`start` or :meth:`attach`."""

    __test__ = False  # not a pytest test class

    def __init__(self, state: State) -> None:
        self.state = state
        # the handles of the processes this bed object spawned: how one of them ended (exit code or signal)
        self._popens: dict[str, subprocess.Popen[bytes]] = {}
        self.dir = Path(state.dir)
        self.region = REGION
        self.account_id = ACCOUNT_ID

    # ---- public attributes used by fixtures, demo and benches ------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.state.apiserver_port}"

    @property
    def ca_pem(self) -> bytes:
        return (self.dir / "pki" / "ca.crt").read_bytes()

    @property
    def aws_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.state.aws_port}"

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    @property
    def audit_log(self) -> Path:
        """JSON lines, one audit event per request of the `drain-orchestrator` group (control_plane.AUDIT_POLICY)."""
        return self.dir / "audit.jsonl"

    def aws_env(self) -> dict[str, str]:
        """Environment that points boto3 (and the product) at the emulator."""
        return {
            "AWS_ENDPOINT_URL": self.aws_endpoint,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",  # moto's fake credentials, not a secret
            "AWS_STS_REGIONAL_ENDPOINTS": "regional",
        }

    def admin_api_client(self) -> Any:
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    # ---- EKS access entries served by the token webhook --------------------------------------------------------
    @property
    def _entries_file(self) -> Path:
        return self.dir / "access-entries.json"

    def _read_entries(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self._entries_file.read_text())
        except FileNotFoundError:
            data = {"clusters": {}}
        return data

    def _write_entries(self, data: dict[str, Any]) -> None:
        tmp = self._entries_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self._entries_file)  # atomic: the webhook never reads half a file

    def register_cluster(self, cluster: str) -> None:
        """Make the webhook accept tokens whose signed x-k8s-aws-id is ``cluster``."""
        data = self._read_entries()
        data["clusters"].setdefault(cluster, {"entries": {}})
        self._write_entries(data)

    def put_access_entry(self, cluster: str, principal_arn: str, username: str, groups: list[str]) -> None:
        data = self._read_entries()
        data["clusters"].setdefault(cluster, {"entries": {}})["entries"][principal_arn] = {
            "username": username,
            "groups": list(groups),
        }
        self._write_entries(data)

    def clear_access_entries(self) -> None:
        self._write_entries({"clusters": {}})

    def authentications(self) -> list[dict[str, Any]]:
        path = self.dir / "webhook-audit.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    # ---- lifecycle ------------------------------------------------------------------------------------------------
    @classmethod
    def attach(cls, directory: Path) -> Testbed | None:
        """The bed recorded in ``directory`` if all its processes are still running, else None."""
        path = directory / "state.json"
        if not path.exists():
            return None
        state = State.load(path)
        if state.procs and all(pid_alive(p) for p in state.procs):
            return cls(state)
        return None

    @classmethod
    def start(
        cls,
        directory: Path,
        *,
        bins: BinDir | None = None,
        log: Callable[[str], None] | None = None,
        apiserver_flags: Sequence[str] = (),
    ) -> Testbed:
        """Start a bed in ``directory``. A component that dies while the bed comes up (a signal from outside, a
        port taken between choosing and binding it) costs one more start on fresh ports, not a session of errors;
        the failed start's logs stay in ``logs.failed-start``. ``apiserver_flags``: more kube-apiserver flags, after
        the bed's own (a later flag wins), for a bed that serves differently (docs/testbed.md)."""
        say = log or (lambda msg: print(f"[testbed] {msg}", file=sys.stderr, flush=True))
        bins = bins or locate_binaries()
        directory = directory.resolve()
        try:
            return cls._start_once(directory, bins, say, apiserver_flags)
        except ComponentExited as e:
            say(f"{e.component} exited while the bed came up ({e.status}); starting it once more on fresh ports")
            kept = directory / "logs.failed-start"
            if kept.exists():
                subprocess.run(["rm", "-rf", str(kept)], check=True)
            (directory / "logs").rename(kept)
        return cls._start_once(directory, bins, say, apiserver_flags)

    @classmethod
    def _start_once(
        cls, directory: Path, bins: BinDir, say: Callable[[str], None], apiserver_flags: Sequence[str]
    ) -> Testbed:
        if (directory / "state.json").exists():
            old = State.load(directory / "state.json")
            stop_procs(old.procs)
        directory.mkdir(parents=True, exist_ok=True)
        for sub in ("etcd", "logs"):
            p = directory / sub
            if p.exists() and sub == "etcd":
                subprocess.run(["rm", "-rf", str(p)], check=True)
            p.mkdir(exist_ok=True)
        t0 = time.monotonic()
        pk = pki_mod.generate(directory / "pki")
        state = State(
            dir=str(directory),
            apiserver_port=free_port(),
            etcd_port=free_port(),
            aws_port=free_port(),
            webhook_port=free_port(),
        )
        bed = cls(state)
        bed._write_entries({"clusters": {}})
        (directory / "webhook-audit.jsonl").write_text("")
        for stale in directory.glob("audit*.jsonl"):  # an earlier cluster's requests (and their rotated files)
            stale.unlink()
        control_plane.write_kubeconfigs(bed, pk)
        try:
            control_plane.spawn_all(bed, bins, pk, say, apiserver_flags)
        except BaseException:
            bed.stop()
            raise
        say(f"ready in {time.monotonic() - t0:.1f} s: kubeconfig {bed.kubeconfig}, AWS {bed.aws_endpoint}")
        return bed

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        out = (self.logs / f"{name}.log").open("ab")
        p = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # own process group: stop() kills it and its children, nothing else
            env={**os.environ, **(env or {})},
        )
        self._popens[name] = p
        started(p)
        proc = Proc(name=name, pid=p.pid, argv0=argv[0], argv=list(argv), env=dict(env or {}))
        # a restarted component takes its old place (start order matters to stop())
        at = next((i for i, q in enumerate(self.state.procs) if q.name == name), None)
        if at is None:
            self.state.procs.append(proc)
        else:
            self.state.procs[at] = proc
        self.save_state()

    def exit_status(self, name: str) -> str:
        """How the component ``name`` this object spawned ended: an exit code or the signal that killed it. Asked
        once the process is seen gone (/proc no longer shows its command line), which a dying process shows a moment
        before the kernel has its exit status to give: waited for briefly."""
        p = self._popens.get(name)
        if p is None:
            return "exit status unknown"
        try:
            p.wait(timeout=EXIT_STATUS_WAIT_S)
        except subprocess.TimeoutExpired:
            return "exit status unknown"
        if p.returncode < 0:
            return f"killed by {signal.Signals(-p.returncode).name}"
        return f"exit code {p.returncode}"

    def save_state(self) -> None:
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(asdict(self.state), indent=2))
        tmp.replace(self.dir / "state.json")

    def stop(self) -> None:
        stop_procs(self.state.procs)
        self.state.procs = []
        state_file = self.dir / "state.json"
        if state_file.exists():
            state_file.write_text(json.dumps(asdict(self.state), indent=2))

    def tail_logs(self, lines: int = 30, first: str | None = None) -> str:
        """The last lines of each component's log (``first``'s log first: the one that failed)."""
        out = []
        for f in sorted(self.logs.glob("*.log"), key=lambda f: (f.stem != first, f.name)):
            content = f.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"==> {f.name} <==\n" + "\n".join(content))
        return "\n".join(out)

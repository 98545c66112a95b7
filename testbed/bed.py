"""The local test bed: a real Kubernetes control plane (etcd, kube-apiserver with RBAC and the EKS token webhook,
kube-controller-manager, kube-scheduler) with kwok standing in for kubelets, and the AWS emulator (moto server with
the test bed's extensions). One implementation backs the pytest session fixture, `make cluster-up` /
`make cluster-down`, the demo and the benchmarks.

Everything binds to 127.0.0.1 on free ports; logs stay in ``<state dir>/logs`` for debugging; ``stop()`` kills only
the process groups this bed started (recorded with their command lines in ``state.json``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from testbed import pki as pki_mod
from testbed.binaries import BinDir, locate_binaries

REPO = Path(__file__).resolve().parents[1]
RBAC_FILE = REPO / "infra" / "k8s" / "rbac.yaml"
REGION = "us-east-1"
ACCOUNT_ID = "123456789012"
START_TIMEOUT_S = float(os.environ.get("DRAIN_TESTBED_START_TIMEOUT", "120"))

CONTROLLERS = ",".join(
    [
        "deployment-controller",
        "replicaset-controller",
        "daemonset-controller",
        "statefulset-controller",
        "disruption-controller",
        "garbage-collector-controller",
        "namespace-controller",
        "horizontal-pod-autoscaler-controller",
    ]
)

# Our own pod-delete stage: a terminating pod is removed exactly when its deletion grace period has passed
# (deletionTimestamp = time of delete + grace), unless it still has finalizers -- which is how a test makes a pod
# hang in Terminating. kwok's "fast" stage ignores grace; its "general" one lands at a random time before it.
POD_DELETE_STAGE = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.metadata.finalizers'
      operator: 'DoesNotExist'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.deletionTimestamp'
  next:
    delete: true
"""
# The apiserver's audit log records every request of the function's Kubernetes group (and nothing else), so a test
# can compare what the product really does with what infra/k8s/rbac.yaml grants.
AUDIT_GROUP = "drain-orchestrator"
AUDIT_POLICY = f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  userGroups: ["{AUDIT_GROUP}"]
- level: None
"""
KWOK_STAGE_FILES = (
    "node_fast_node-initialize.yaml",
    "node_heartbeat_node-heartbeat.yaml",
    "pod_fast_pod-ready.yaml",
    "pod_fast_pod-complete.yaml",
)


class TestbedError(RuntimeError):
    pass


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


def _pid_alive(proc: Proc) -> bool:
    try:
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return cmdline == proc.argv0


class Testbed:
    """A running (or attachable) bed. Create with :meth:`start` or :meth:`attach`."""

    __test__ = False  # not a pytest test class

    def __init__(self, state: State) -> None:
        self.state = state
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
        """JSON lines, one audit event per request of the `drain-orchestrator` group (see AUDIT_POLICY)."""
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
        if state.procs and all(_pid_alive(p) for p in state.procs):
            return cls(state)
        return None

    @classmethod
    def start(cls, directory: Path, *, bins: BinDir | None = None, log: Callable[[str], None] | None = None) -> Testbed:
        say = log or (lambda msg: print(f"[testbed] {msg}", file=sys.stderr, flush=True))
        bins = bins or locate_binaries()
        directory = directory.resolve()
        if (directory / "state.json").exists():
            old = State.load(directory / "state.json")
            _stop_procs(old.procs)
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
        bed._write_kubeconfigs(pk)
        try:
            bed._spawn_all(bins, pk, say)
        except BaseException:
            bed.stop()
            raise
        say(f"ready in {time.monotonic() - t0:.1f} s: kubeconfig {bed.kubeconfig}, AWS {bed.aws_endpoint}")
        return bed

    def _write_kubeconfigs(self, pk: pki_mod.Pki) -> None:
        kc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "testbed", "cluster": {"server": self.server, "certificate-authority": str(pk.ca_crt)}}
            ],
            "users": [
                {"name": "admin", "user": {"client-certificate": str(pk.admin_crt), "client-key": str(pk.admin_key)}}
            ],
            "contexts": [{"name": "testbed", "context": {"cluster": "testbed", "user": "admin"}}],
            "current-context": "testbed",
        }
        self.kubeconfig.write_text(json.dumps(kc, indent=2))
        webhook = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "eks-token-webhook",
                    "cluster": {
                        "server": f"https://127.0.0.1:{self.state.webhook_port}/authenticate",
                        "certificate-authority": str(pk.ca_crt),
                    },
                }
            ],
            "users": [{"name": "apiserver", "user": {}}],
            "contexts": [{"name": "webhook", "context": {"cluster": "eks-token-webhook", "user": "apiserver"}}],
            "current-context": "webhook",
        }
        (self.dir / "webhook.kubeconfig").write_text(json.dumps(webhook, indent=2))
        (self.dir / "scheduler.yaml").write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            f"clientConnection: {{kubeconfig: {self.kubeconfig}, qps: 200, burst: 400}}\n"
            "leaderElection: {leaderElect: false}\n"
        )

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
        proc = Proc(name=name, pid=p.pid, argv0=argv[0], argv=list(argv), env=dict(env or {}))
        # a restarted component takes its old place (start order matters to stop())
        at = next((i for i, q in enumerate(self.state.procs) if q.name == name), None)
        if at is None:
            self.state.procs.append(proc)
        else:
            self.state.procs[at] = proc
        self.save_state()

    def save_state(self) -> None:
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(asdict(self.state), indent=2))
        tmp.replace(self.dir / "state.json")

    def _spawn_all(self, bins: BinDir, pk: pki_mod.Pki, say: Callable[[str], None]) -> None:
        s = self.state
        d = self.dir
        self._spawn(
            "etcd",
            [
                str(bins.etcd),
                "--name=default",
                f"--data-dir={d / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{s.etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{s.etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{free_port()}",
                "--initial-cluster-state=new",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
                "--quota-backend-bytes=4294967296",
            ],
        )
        # the AWS emulator (moto + extensions + token webhook), started in parallel with etcd
        self._spawn(
            "awsemu",
            [
                sys.executable,
                "-m",
                "testbed.awsemu",
                f"--port={s.aws_port}",
                f"--webhook-port={s.webhook_port}",
                f"--state-dir={d}",
                f"--tls-cert={pk.apiserver_crt}",
                f"--tls-key={pk.apiserver_key}",
                f"--eks-endpoint={self.server}",
                f"--eks-ca-file={pk.ca_crt}",
            ],
            env={"PYTHONPATH": str(REPO), "MOTO_ALLOW_NONEXISTENT_REGION": "true"},
        )
        _wait(
            f"etcd http://127.0.0.1:{s.etcd_port}/health",
            lambda: _http_ok(f"http://127.0.0.1:{s.etcd_port}/health"),
            self,
            "etcd",
        )
        say("etcd healthy; starting kube-apiserver")
        (d / "audit-policy.yaml").write_text(AUDIT_POLICY)
        self._spawn(
            "kube-apiserver",
            [
                str(bins.kube_apiserver),
                f"--etcd-servers=http://127.0.0.1:{s.etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={s.apiserver_port}",
                f"--tls-cert-file={pk.apiserver_crt}",
                f"--tls-private-key-file={pk.apiserver_key}",
                f"--client-ca-file={pk.ca_crt}",
                "--authorization-mode=RBAC",
                f"--authentication-token-webhook-config-file={d / 'webhook.kubeconfig'}",
                "--authentication-token-webhook-version=v1",
                # no caching: every request is authenticated, so token expiry and access-entry changes are observable
                "--authentication-token-webhook-cache-ttl=0s",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pk.sa_pub}",
                f"--service-account-signing-key-file={pk.sa_key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                f"--audit-policy-file={d / 'audit-policy.yaml'}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",  # written before the response: a test reads it right after a run
                "--v=1",
            ],
        )
        ctx = ssl.create_default_context(cafile=str(pk.ca_crt))
        _wait("kube-apiserver /readyz", lambda: _http_ok(f"{self.server}/readyz", ctx), self, "kube-apiserver")
        say("kube-apiserver ready; starting controller-manager, scheduler, kwok")
        self._spawn(
            "kube-controller-manager",
            [
                str(bins.kube_controller_manager),
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--secure-port=0",
                f"--controllers={CONTROLLERS}",
                "--use-service-account-credentials=false",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--concurrent-deployment-syncs=10",
                "--concurrent-replicaset-syncs=10",
                # no metrics API on the bed: an HPA only enforces its min/max replicas; resync often for tests
                "--horizontal-pod-autoscaler-sync-period=2s",
                "--v=1",
            ],
        )
        self._spawn(
            "kube-scheduler",
            [str(bins.kube_scheduler), f"--config={d / 'scheduler.yaml'}", "--secure-port=0", "--v=1"],
        )
        stages = d / "kwok-stages.yaml"
        docs = [(bins.kwok_stages / f).read_text() for f in KWOK_STAGE_FILES] + [POD_DELETE_STAGE]
        stages.write_text("\n---\n".join(x.strip() for x in docs) + "\n")
        self._spawn(
            "kwok",
            [
                str(bins.kwok),
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=true",
                f"--config={stages}",
                "--node-lease-duration-seconds=0",
            ],
        )
        self._apply_rbac()
        _wait("AWS emulator", lambda: _http_ok(f"{self.aws_endpoint}/_testbed/health"), self, "awsemu")

    def _apply_rbac(self) -> None:
        import yaml
        from kubernetes import utils

        api = self.admin_api_client()
        with api:
            for doc in yaml.safe_load_all(RBAC_FILE.read_text()):
                if doc:
                    with contextlib.suppress(utils.FailToCreateError):
                        utils.create_from_dict(api, doc)

    def stop(self) -> None:
        _stop_procs(self.state.procs)
        self.state.procs = []
        state_file = self.dir / "state.json"
        if state_file.exists():
            state_file.write_text(json.dumps(asdict(self.state), indent=2))

    def tail_logs(self, lines: int = 30) -> str:
        out = []
        for f in sorted(self.logs.glob("*.log")):
            content = f.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"==> {f.name} <==\n" + "\n".join(content))
        return "\n".join(out)


def _stop_procs(procs: list[Proc]) -> None:
    alive = [p for p in procs if _pid_alive(p)]
    # reverse start order: controllers before apiserver before etcd
    for p in reversed(alive):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_pid_alive(p) for p in alive):
        _reap()
        time.sleep(0.1)
    for p in alive:
        if _pid_alive(p):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
    _reap()


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break


def _http_ok(url: str, ctx: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
        return False


def _wait(what: str, ok: Callable[[], bool], bed: Testbed, proc_name: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if ok():
            return
        proc = next((p for p in bed.state.procs if p.name == proc_name), None)
        if proc and not _pid_alive(proc):
            _reap()
            raise TestbedError(f"{proc_name} exited while waiting for {what}:\n{bed.tail_logs()}")
        time.sleep(0.1)
    raise TestbedError(f"timed out after {START_TIMEOUT_S:.0f} s waiting for {what}:\n{bed.tail_logs()}")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()

"""The function as Lambda runs it: the code asset, a runtime interface client, the Runtime Interface Emulator and
a durable-execution service over HTTP.

- The code asset is built by infra/bundle.py, the CDK asset's own recipe (pruned botocore models, compiled
  bytecode), for this machine's architecture, and mounted read-only (a private mount namespace) as /var/task is.
- `awslambdaric` (pinned in uv.lock, group `lambda-runtime`) is installed next to it, as Lambda's Python runtime
  provides it, and runs on the base Python 3.13 with a clean environment: nothing from `.venv` is importable.
- The AWS Lambda Runtime Interface Emulator (build/rie/go.mod) starts the runtime with the handler, and the
  environment comes from the synthesized template plus the bed's endpoints and the role's credentials.
- `dex-local-runner start-server` (aws-durable-execution-sdk-python-testing) is the durable-execution service:
  it starts executions, takes the SDK's checkpoints (the function's Lambda client is pointed at it with
  `AWS_ENDPOINT_URL_LAMBDA`) and re-invokes the function through the emulator after waits and failures.

The emulator's runtime API always binds 127.0.0.1:9001, so one runtime runs at a time in a network namespace:
runtimes on the host's network take turns through a lock file (pytest workers, other checkouts on the machine);
versioned_runtime.py runs one per function version, each in a namespace of its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra import bundle
from testbed.bed import REGION, Testbed
from testbed.binaries import BinDir
from testbed.procs import free_port, http_ok

RUNTIME_API = ("127.0.0.1", 9001)  # fixed in the emulator
# held from a runtime's start to its stop: the port is the machine's, whoever runs the emulator
RUNTIME_API_LOCK = Path(tempfile.gettempdir()) / "drain-orchestrator-lambda-rie-9001.lock"
RUNTIME_API_WAIT_S = 240.0
FUNCTION_NAME = "function"  # the emulator serves one function under this name
API = "/2025-12-01/durable-executions"


class RuntimeStartError(RuntimeError):
    pass


@dataclass(frozen=True)
class FunctionConfig:
    """What the synthesized template says about the function."""

    handler: str
    runtime: str
    timeout: int
    memory: int
    environment: dict[str, str]

    @classmethod
    def from_template(
        cls, template: dict[str, Any], refs: dict[str, str], handler: str = "drain_orchestrator.handler.handler"
    ) -> FunctionConfig:
        """The function whose handler is ``handler`` (the stack has another: the RBAC applier's)."""
        (props,) = [
            r["Properties"]
            for r in template["Resources"].values()
            if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Handler"] == handler
        ]
        env: dict[str, str] = {}
        for name, value in props["Environment"]["Variables"].items():
            if isinstance(value, dict):
                if value.get("Ref", "") not in refs:
                    raise RuntimeStartError(f"template variable {name} refers to {value}: give its local value")
                env[name] = refs[value["Ref"]]
            else:
                env[name] = str(value)
        logging = props.get("LoggingConfig", {})
        if logging.get("LogFormat") == "JSON":  # what Lambda sets for JSON logging
            env["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
            env["AWS_LAMBDA_LOG_LEVEL"] = logging.get("ApplicationLogLevel", "INFO")
        return cls(props["Handler"], props["Runtime"], int(props["Timeout"]), int(props["MemorySize"]), env)


@dataclass
class Execution:
    arn: str
    status: str
    result: Any
    error: dict[str, Any] | None
    raw: dict[str, Any] = field(repr=False)


def build_task_root(directory: Path) -> Path:
    """The code asset for this machine's architecture, exactly as the CDK bundler lays it out."""
    task = directory / "task"
    if task.exists():
        shutil.rmtree(task)
    bundle.assemble(task, bundle.host_platform())
    return task


def build_runtime_root(directory: Path) -> Path:
    """awslambdaric and its dependencies from uv.lock (hashes checked), compiled like the task root."""
    root = directory / "runtime"
    if root.exists():
        shutil.rmtree(root)
    requirements = directory / "lambda-runtime.txt"
    uv = bundle._uv()
    common = ["--quiet", "--no-config"]
    for cmd in (
        [uv, "export", *common, "--frozen", "--only-group", "lambda-runtime", "--no-emit-project",
         "--format", "requirements-txt", "--output-file", str(requirements)],
        [uv, "pip", "install", *common, "--target", str(root), "--python-platform", bundle.host_platform(),
         "--python-version", bundle.PYTHON_VERSION, "--only-binary", ":all:", "--no-deps", "--require-hashes",
         "--link-mode", "copy", "-r", str(requirements)],
    ):  # fmt: skip
        subprocess.run(cmd, cwd=bundle.REPO_ROOT, check=True, capture_output=True, timeout=600)
    bundle.compile_bytecode(root)
    return root


def base_python() -> str:
    """The Python 3.13 the venv was made from: the runtime must not see the venv's packages."""
    exe = Path(sys.base_prefix) / "bin" / f"python{bundle.PYTHON_VERSION}"
    if not exe.exists():
        raise RuntimeStartError(f"base interpreter not found at {exe}")
    return str(exe)


def _read_only(argv: list[str], path: Path, *, private_network: bool = False) -> list[str]:
    """Run argv in a private mount namespace where ``path`` is a read-only bind mount of itself; with
    ``private_network`` also in a network namespace of its own (loopback only: see netns_bridge.py)."""
    unshare = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--mount", "--map-root-user"]
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && cd "$0" && exec "$@"'
    if private_network:
        unshare.append("--net")
        script = f"ip link set lo up && {script}"
    return [*unshare, "sh", "-c", script, str(path), *argv]


class LambdaRuntime:
    """Emulator + runtime client + durable-execution service for one test session (see the module doc)."""

    def __init__(self, bed: Testbed, directory: Path, invoke_port: int, service_port: int) -> None:
        self.bed, self.dir = bed, directory
        self.invoke_port, self.service_port = invoke_port, service_port
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.emulator_started = 0.0
        self._runtime_api: int | None = None  # the lock's descriptor while this runtime holds 127.0.0.1:9001

    @property
    def service(self) -> str:
        return f"http://127.0.0.1:{self.service_port}"

    @classmethod
    def start(
        cls, bed: Testbed, bins: BinDir, function: FunctionConfig, env: dict[str, str], roots: tuple[Path, Path]
    ) -> LambdaRuntime:
        """Start the durable-execution service and the emulator on ``roots`` (task root, runtime root) with
        ``env`` (the role's credentials, test settings) over the template's environment."""
        if function.runtime != f"python{bundle.PYTHON_VERSION}":
            raise RuntimeStartError(f"template runtime {function.runtime}, bundle built for {bundle.PYTHON_VERSION}")
        task, runtime_root = roots
        rt = cls(bed, task.parent, free_port(), free_port())
        rt._runtime_api = _take_runtime_api()
        try:
            with socket.socket() as s:
                if s.connect_ex(RUNTIME_API) == 0:
                    raise RuntimeStartError("127.0.0.1:9001 is taken by a Runtime Interface Emulator outside the lock")
            rt._start_service()
            rt._start_emulator(bins, function, env, task, runtime_root)
        except BaseException:
            rt.stop()
            raise
        return rt

    def _spawn(self, name: str, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        out = (self.bed.logs / f"{name}.log").open("ab")
        p = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=cwd,
        )
        self.procs[name] = p

    def logs(self, lines: int = 40) -> str:
        out = []
        for name in self.procs:
            content = (self.bed.logs / f"{name}.log").read_text(errors="replace").splitlines()[-lines:]
            out.append(f"==> {name}.log <==\n" + "\n".join(content))
        return "\n".join(out)

    def _wait(self, what: str, ok: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ok():
                return
            dead = [name for name, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeStartError(f"{dead} exited while waiting for {what}:\n{self.logs()}")
            time.sleep(0.1)
        raise RuntimeStartError(f"timed out waiting for {what}:\n{self.logs()}")

    def _start_service(self, lambda_endpoint: str | None = None) -> None:
        exe = Path(sys.executable).parent / "dex-local-runner"
        argv = [
            sys.executable, str(exe), "start-server", "--host", "127.0.0.1", "--port", str(self.service_port),
            "--lambda-endpoint", lambda_endpoint or f"http://127.0.0.1:{self.invoke_port}",
            "--local-runner-endpoint", self.service, "--local-runner-region", REGION, "--no-skip-time",
            "--execution-timeout", "600", "--invocation-timeout", "600",
        ]  # fmt: skip
        # the service signs its Invoke calls like any Lambda client; the emulator ignores the signature
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
        env["AWS_DEFAULT_REGION"] = REGION
        self._spawn("dex-local-runner", argv, env)
        self._wait("durable-execution service", lambda: http_ok(f"{self.service}/health"))

    def _start_emulator(
        self,
        bins: BinDir,
        function: FunctionConfig,
        env: dict[str, str],
        task: Path,
        runtime_root: Path,
        *,
        name: str = "lambda-rie",
        private_network: bool = False,
    ) -> subprocess.Popen[bytes]:
        full = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(self.dir),
            **function.environment,
            **env,
            "LAMBDA_TASK_ROOT": str(task),
            "PYTHONPATH": f"{task}:{runtime_root}",  # /var/task first, then the runtime, as in Lambda
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(function.timeout),
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory),
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL_LAMBDA": self.service,
        }
        argv = [
            str(bins.lambda_rie), "--runtime-interface-emulator-address", f"127.0.0.1:{self.invoke_port}",
            base_python(), "-s", "-m", "awslambdaric", function.handler,
        ]  # fmt: skip
        # the emulator starts the runtime at once and awslambdaric imports the handler module (the init phase);
        # a first invoke right after the port opens is queued until init is done: together, a cold start
        self.emulator_started = time.monotonic()
        self._spawn(name, _read_only(argv, task, private_network=private_network), full, cwd=task)
        if not private_network:  # in a namespace of its own, the caller bridges to it and waits
            self._wait("Runtime Interface Emulator", lambda: _port_open(self.invoke_port))
        return self.procs[name]

    # ---- durable executions ------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.service}{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")

    def start_execution(
        self,
        event: dict[str, Any],
        name: str,
        *,
        timeout: int = 600,
        function: str = FUNCTION_NAME,
        qualifier: str = "$LATEST",  # the emulator serves one unqualified function
    ) -> str:
        out = self._call(
            "POST",
            "/start-durable-execution",
            {
                "AccountId": self.bed.account_id,
                "FunctionName": function,
                "FunctionQualifier": qualifier,
                "ExecutionName": name,
                "ExecutionTimeoutSeconds": timeout,
                "ExecutionRetentionPeriodDays": 1,
                "Input": json.dumps(event),
            },
        )
        return str(out["ExecutionArn"])

    def describe(self, arn: str) -> Execution:
        raw = self._call("GET", f"{API}/{urllib.parse.quote(arn, safe='')}")
        result = raw.get("Result")
        return Execution(
            arn=arn,
            status=raw["Status"],
            result=json.loads(result) if result else None,
            error=raw.get("Error"),
            raw=raw,
        )

    def history(self, arn: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        marker = ""
        while True:
            query = "?IncludeExecutionData=true" + (f"&Marker={urllib.parse.quote(marker)}" if marker else "")
            page = self._call("GET", f"{API}/{urllib.parse.quote(arn, safe='')}/history{query}")
            events.extend(page.get("Events", []))
            marker = page.get("NextMarker") or ""
            if not marker:
                return events

    def wait(self, arn: str, timeout: float = 240) -> Execution:
        deadline = time.monotonic() + timeout
        while True:
            execution = self.describe(arn)
            if execution.status not in ("RUNNING", "PENDING"):
                return execution
            if time.monotonic() > deadline:
                raise TimeoutError(f"execution {arn} still {execution.status} after {timeout:.0f} s")
            time.sleep(0.25)

    def runtime_pids(self) -> list[int]:
        """The runtime (awslambdaric) processes the emulator started, in its session."""
        rie = self.procs["lambda-rie"]
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
                same_session = os.getsid(int(entry.name)) == rie.pid
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            if same_session and Path(cmdline[0].decode()).name.startswith("python") and b"awslambdaric" in cmdline:
                pids.append(int(entry.name))
        return pids

    def stop(self) -> None:
        """SIGTERM each process group this runtime started, SIGKILL what is left after 10 s. A group whose leader has
        already ended is not signalled: its number may since belong to another process's group."""
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        self.procs = {}
        if self._runtime_api is not None:
            os.close(self._runtime_api)  # the next runtime may bind 127.0.0.1:9001
            self._runtime_api = None


def _take_runtime_api(wait: float = RUNTIME_API_WAIT_S) -> int:
    """The lock on 127.0.0.1:9001 (see RUNTIME_API_LOCK), waited for while another runtime holds it."""
    fd = os.open(RUNTIME_API_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise RuntimeStartError(
                    f"127.0.0.1:9001 stayed held by another Lambda runtime for {wait:.0f} s (lock {RUNTIME_API_LOCK})"
                ) from None
            time.sleep(0.2)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0

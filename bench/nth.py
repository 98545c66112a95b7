"""aws-node-termination-handler (NTH) in queue-processor mode against the test bed, as its Helm chart runs it in a
cluster: an SQS queue in the emulator carries EventBridge envelopes, NTH polls it with its own access key (so the
emulator counts its AWS calls apart from the orchestrator's), and talks to the apiserver only through in-cluster
configuration: KUBERNETES_SERVICE_HOST/PORT plus a ServiceAccount token and CA under
/var/run/secrets/kubernetes.io/serviceaccount, which exist only inside NTH's own mount namespace (``unshare -m``,
or ``unshare -rm`` when not root: a tmpfs over /run and a read-only bind mount, so the machine's paths are never
touched). Its RBAC is the chart's (bench/nth-rbac.yaml). Used by bench/bench_nth.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from kubernetes import client, utils

if TYPE_CHECKING:
    from testbed.aws_seed import AwsSeed
    from testbed.bed import Testbed

NTH_VERSION = "v1.25.1"  # keep in step with build/build-nth.sh
RBAC_FILE = Path(__file__).with_name("nth-rbac.yaml")
NAMESPACE, SERVICE_ACCOUNT = "kube-system", "aws-node-termination-handler"
# a ServiceAccount of kube-system falls in APF's kube-system-service-accounts flow schema (workload-high)
FLOW_SCHEMA = "kube-system-service-accounts"
ACCESS_KEY = "AKIANTHQUEUEPROCESSR"  # NTH's own key: the emulator counts requests per access key
MANAGED_TAG = "aws-node-termination-handler/managed"  # the tag key NTH checks before acting (value ignored)
SA_DIR = "/run/secrets/kubernetes.io/serviceaccount"  # /var/run is a symlink to /run on Debian
STARTED = "Started watching for interruption events"


class NthMissing(RuntimeError):
    """The NTH binary is not built, or the host cannot give it a private mount namespace."""


def cache_root() -> Path:
    """The cache build/build-nth.sh writes to (same variables, same default)."""
    if os.environ.get("DRAIN_TESTBED_CACHE"):
        return Path(os.environ["DRAIN_TESTBED_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "drain-orchestrator" / "testbed"


def binary() -> Path:
    """The cached NTH binary; never builds it (that takes ~9 min), so callers fail fast with the reason."""
    path = cache_root() / f"nth-{NTH_VERSION}" / "bin" / "node-termination-handler"
    if not os.access(path, os.X_OK):
        raise NthMissing(
            f"aws-node-termination-handler {NTH_VERSION} is not built (expected {path}): run `make build-nth` "
            "first (~9 min cold, needs Go >= 1.24)"
        )
    for tool in ("unshare", "mount"):
        if shutil.which(tool) is None:
            raise NthMissing(f"`{tool}` (util-linux) is needed to give NTH its private mount namespace")
    return path


def apply_rbac(api: Any) -> None:
    for doc in yaml.safe_load_all(RBAC_FILE.read_text()):
        if doc:
            with contextlib.suppress(utils.FailToCreateError):  # already there from an earlier run on this bed
                utils.create_from_dict(api, doc)


def service_account_token(api: Any, seconds: int = 7200) -> str:
    req = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=seconds))
    resp = client.CoreV1Api(api).create_namespaced_service_account_token(SERVICE_ACCOUNT, NAMESPACE, req)
    return str(resp.status.token)


def create_queue(aws: AwsSeed, name: str = "nth-events") -> str:
    """The queue as NTH's sample CloudFormation template makes it (retention 300 s)."""
    sqs = aws.client("sqs")
    return str(sqs.create_queue(QueueName=name, Attributes={"MessageRetentionPeriod": "300"})["QueueUrl"])


def send_events(aws: AwsSeed, queue_url: str, events: list[dict[str, Any]]) -> None:
    """What an EventBridge rule with this queue as target delivers: the event envelope as the message body."""
    sqs = aws.client("sqs")
    for i in range(0, len(events), 10):
        batch = events[i : i + 10]
        entries = [{"Id": str(j), "MessageBody": json.dumps(ev)} for j, ev in enumerate(batch)]
        failed = sqs.send_message_batch(QueueUrl=queue_url, Entries=entries).get("Failed")
        if failed:
            raise RuntimeError(f"SendMessageBatch failed: {failed}")


def queue_depth(aws: AwsSeed, queue_url: str) -> dict[str, int]:
    attrs = aws.client("sqs").get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return {
        "visible": int(attrs["ApproximateNumberOfMessages"]),
        "in_flight": int(attrs["ApproximateNumberOfMessagesNotVisible"]),
    }


def unique_id(event: dict[str, Any]) -> dict[str, Any]:
    """EventBridge gives every event its own id, and NTH keys its event store by it: events sharing an id would
    be taken for redeliveries of one."""
    return {**event, "id": str(uuid.uuid4())}


@dataclass
class NthProcess:
    proc: subprocess.Popen[bytes]
    log: Path
    flags: list[str]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def lines(self) -> list[dict[str, Any]]:
        """Its JSON log lines (anything else it printed comes back as {"raw": line})."""
        out: list[dict[str, Any]] = []
        for ln in self.log.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(ln))
            except ValueError:
                out.append({"raw": ln})
        return out

    def wait_started(self, timeout: float = 60) -> float:
        t = time.monotonic()
        while time.monotonic() - t < timeout:
            if not self.alive():
                raise RuntimeError(f"NTH exited ({self.proc.returncode}) at start-up:\n{self.log.read_text()[-3000:]}")
            if STARTED in self.log.read_text(errors="replace"):
                return time.monotonic() - t
            time.sleep(0.2)
        raise RuntimeError(f"NTH did not start in {timeout} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start(bed: Testbed, api: Any, queue_url: str, workdir: Path, extra_flags: tuple[str, ...] = ()) -> NthProcess:
    """NTH in its own mount namespace with the chart's defaults for queue-processor mode (workers 10, node
    termination grace period 120 s, tag check on) plus ``extra_flags``."""
    exe = binary()
    apply_rbac(api)
    sa = workdir / "serviceaccount"
    sa.mkdir(parents=True, exist_ok=True)
    (sa / "ca.crt").write_bytes(bed.ca_pem)
    (sa / "namespace").write_text(NAMESPACE)
    token = sa / "token"
    token.touch(mode=0o600)
    token.write_text(service_account_token(api))
    flags = [
        "--enable-sqs-termination-draining=true",
        f"--queue-url={queue_url}",
        f"--aws-endpoint={bed.aws_endpoint}",
        f"--aws-region={bed.region}",
        "--node-name=nth-bench",  # required; the chart passes the node NTH's pod runs on
        "--json-logging=true",
        "--workers=10",
        *extra_flags,
    ]
    # the namespace's mounts die with it; propagation is private (unshare's default), so nothing leaks out
    script = 'mount -t tmpfs -o size=1m,mode=755 nth-run /run && mkdir -p "$1" && mount --bind -o ro "$2" "$1" && '
    script += 'shift 2 && exec "$@"'
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),  # no shared ~/.aws config reaches NTH
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(bed.state.apiserver_port),
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": "nth-bench-secret",  # moto accepts any secret; not a credential
        "AWS_REGION": bed.region,
    }
    log = workdir / "nth.log"
    # as root a mount namespace is enough; otherwise a user namespace too (-r maps the caller to root in it, which
    # mount needs there, and to nothing outside)
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    cmd = [*unshare, "sh", "-c", script, "nth", SA_DIR, str(sa), str(exe), *flags]
    with log.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return NthProcess(proc, log, flags)

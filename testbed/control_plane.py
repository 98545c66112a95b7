"""The control plane's components as the bed starts them: etcd, the AWS emulator (with the token webhook),
kube-apiserver (RBAC, the token webhook, an audit log of the function's group), kube-controller-manager,
kube-scheduler and kwok with the bed's own pod-delete stage; then the product's RBAC applied."""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from testbed.binaries import REPO, BinDir
from testbed.pki import Pki
from testbed.procs import ComponentExited, TestbedError, free_port, http_ok, pid_alive, reap

if TYPE_CHECKING:
    from testbed.bed import Testbed

RBAC_FILE = REPO / "infra" / "k8s" / "rbac.yaml"
# surge before evict's rights: the bed runs the function's default (SURGE_BLOCKED_PODS=annotated), so it applies both;
# a test of SURGE_BLOCKED_PODS=never takes this one away for its run (tests/integration/rbac_support.py)
SURGE_RBAC_FILE = REPO / "infra" / "k8s" / "rbac-surge.yaml"
# the images the AWS emulator serves (moto's MOTO_AMIS_PATH): an Amazon Linux 2 x86_64 and an arm64 one
AMIS_FILE = REPO / "testbed" / "aws" / "amis.json"
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
        # as on EKS: taints a cordoned node node.kubernetes.io/unschedulable:NoSchedule (the drain's witness that the
        # control plane has seen its cordon) and a node whose conditions say so not-ready, disk-pressure, ...
        "node-lifecycle-controller",
    ]
)
# kwok renews no Lease and posts its nodes' status every 20-45 s; the node lifecycle controller's default grace (50 s)
# would mark a node Unknown, and taint it unreachable, whenever the shared machine delays one heartbeat
NODE_MONITOR_GRACE = "10m"

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
- level: Metadata
  users: ["system:serviceaccount:kube-system:aws-node-termination-handler"]
- level: None
"""
KWOK_STAGE_FILES = (
    "node_fast_node-initialize.yaml",
    "node_heartbeat_node-heartbeat.yaml",
    "pod_fast_pod-ready.yaml",
    "pod_fast_pod-complete.yaml",
)


def write_kubeconfigs(bed: Testbed, pk: Pki) -> None:
    """The admin kubeconfig, the apiserver's webhook kubeconfig and the scheduler's configuration."""
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "testbed", "cluster": {"server": bed.server, "certificate-authority": str(pk.ca_crt)}}],
        "users": [
            {"name": "admin", "user": {"client-certificate": str(pk.admin_crt), "client-key": str(pk.admin_key)}}
        ],
        "contexts": [{"name": "testbed", "context": {"cluster": "testbed", "user": "admin"}}],
        "current-context": "testbed",
    }
    bed.kubeconfig.write_text(json.dumps(kc, indent=2))
    webhook = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "eks-token-webhook",
                "cluster": {
                    "server": f"https://127.0.0.1:{bed.state.webhook_port}/authenticate",
                    "certificate-authority": str(pk.ca_crt),
                },
            }
        ],
        "users": [{"name": "apiserver", "user": {}}],
        "contexts": [{"name": "webhook", "context": {"cluster": "eks-token-webhook", "user": "apiserver"}}],
        "current-context": "webhook",
    }
    (bed.dir / "webhook.kubeconfig").write_text(json.dumps(webhook, indent=2))
    (bed.dir / "scheduler.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"clientConnection: {{kubeconfig: {bed.kubeconfig}, qps: 200, burst: 400}}\n"
        "leaderElection: {leaderElect: false}\n"
    )


def spawn_all(
    bed: Testbed, bins: BinDir, pk: Pki, say: Callable[[str], None], apiserver_flags: Sequence[str] = ()
) -> None:
    """Start every component in dependency order and wait until each serves (the AWS emulator starts beside etcd);
    ``apiserver_flags`` go after the apiserver's own."""
    s = bed.state
    d = bed.dir
    bed._spawn(
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
    bed._spawn(
        "awsemu",
        [
            sys.executable,
            "-m",
            "testbed.aws.server",
            f"--port={s.aws_port}",
            f"--webhook-port={s.webhook_port}",
            f"--state-dir={d}",
            f"--tls-cert={pk.apiserver_crt}",
            f"--tls-key={pk.apiserver_key}",
            f"--eks-endpoint={bed.server}",
            f"--eks-ca-file={pk.ca_crt}",
        ],
        # two images instead of moto's ~1,300 default ones: every reset (one per test) rebuilt them all, with a
        # snapshot and a volume each, for about a third of the emulator's CPU in a full run
        env={"PYTHONPATH": str(REPO), "MOTO_ALLOW_NONEXISTENT_REGION": "true", "MOTO_AMIS_PATH": str(AMIS_FILE)},
    )
    _wait(
        f"etcd http://127.0.0.1:{s.etcd_port}/health",
        lambda: http_ok(f"http://127.0.0.1:{s.etcd_port}/health"),
        bed,
        "etcd",
    )
    say("etcd healthy; starting kube-apiserver")
    (d / "audit-policy.yaml").write_text(AUDIT_POLICY)
    bed._spawn(
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
            "--disable-admission-plugins=ServiceAccount",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            f"--audit-policy-file={d / 'audit-policy.yaml'}",
            f"--audit-log-path={bed.audit_log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",  # written before the response: a test reads it right after a run
            # one file for the bed's life (the default rotates at 100 MB): readers keep byte offsets into it
            "--audit-log-maxsize=4096",
            "--v=1",
            *apiserver_flags,
        ],
    )
    ctx = ssl.create_default_context(cafile=str(pk.ca_crt))
    _wait("kube-apiserver /readyz", lambda: http_ok(f"{bed.server}/readyz", ctx), bed, "kube-apiserver")
    say("kube-apiserver ready; starting controller-manager, scheduler, kwok")
    bed._spawn(
        "kube-controller-manager",
        [
            str(bins.kube_controller_manager),
            f"--kubeconfig={bed.kubeconfig}",
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
            f"--node-monitor-grace-period={NODE_MONITOR_GRACE}",
            "--v=1",
        ],
    )
    bed._spawn(
        "kube-scheduler",
        [str(bins.kube_scheduler), f"--config={d / 'scheduler.yaml'}", "--secure-port=0", "--v=1"],
    )
    stages = d / "kwok-stages.yaml"
    docs = [(bins.kwok_stages / f).read_text() for f in KWOK_STAGE_FILES] + [POD_DELETE_STAGE]
    stages.write_text("\n---\n".join(x.strip() for x in docs) + "\n")
    bed._spawn(
        "kwok",
        [
            str(bins.kwok),
            f"--kubeconfig={bed.kubeconfig}",
            "--manage-all-nodes=true",
            f"--config={stages}",
            "--node-lease-duration-seconds=0",
        ],
    )
    _apply_rbac(bed)
    _wait("AWS emulator", lambda: http_ok(f"{bed.aws_endpoint}/_testbed/health"), bed, "awsemu")


def _apply_rbac(bed: Testbed) -> None:
    import yaml
    from kubernetes import utils

    api = bed.admin_api_client()
    with api:
        for path in (RBAC_FILE, SURGE_RBAC_FILE):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    with contextlib.suppress(utils.FailToCreateError):
                        utils.create_from_dict(api, doc)


def _wait(what: str, ok: Callable[[], bool], bed: Testbed, proc_name: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if ok():
            return
        proc = next((p for p in bed.state.procs if p.name == proc_name), None)
        if proc and not pid_alive(proc):
            status = bed.exit_status(proc_name)
            reap()
            raise ComponentExited(
                proc_name, status, f"{proc_name} exited ({status}) while waiting for {what}:\n{bed.tail_logs()}"
            )
        time.sleep(0.1)
    raise TestbedError(f"timed out after {START_TIMEOUT_S:.0f} s waiting for {what}:\n{bed.tail_logs()}")

"""A single-replica Deployment under a PodDisruptionBudget minAvailable 1, drained by `kubectl drain` and by
`drain-orchestrator drain --surge annotated`, and (--nth) by aws-node-termination-handler in queue-processor mode
(an ASG terminate lifecycle event for the node's instance on its queue), on the local test bed (real controllers
and scheduler; kwok makes pods Ready). A fresh namespace and two fresh nodes each run: the pod on one, room for
its replacement on the other.

kubectl retries the refused eviction every 5 s until --timeout; ours adds the replacement first and evicts once
the budget allows. A watch started before each drain counts the Deployment's Ready pods after every change the
apiserver reports. Prints a markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "lambda_src")]

from tests.integration.surge_support import ReadyWatch, opt_in  # noqa: E402

from bench import harness, nth  # noqa: E402
from testbed import samples  # noqa: E402
from testbed.aws_seed import TERMINATING, AwsSeed  # noqa: E402
from testbed.kube import KubeScenario  # noqa: E402

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")


def fixture(k8s: KubeScenario) -> str:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("web", 1, [node], spare, grace=1)
    opt_in(k8s, "web")
    k8s.pdb("web", {"app": "web"}, min_available=1)
    k8s.wait_pdb("web", disruptions_allowed=0)
    return node


def nth_row(bed: Any, timeout: int, workdir: Path) -> str:
    """NTH on the same fixture behind an owned ASG instance: its terminate event on NTH's queue, then NTH's own
    drain (kubectl's drain library, its node termination grace period 120 s) watched until the hook is completed
    or ``timeout`` + 120 s."""
    aws = AwsSeed(bed)
    aws.reset()
    api = bed.admin_api_client()
    k8s = KubeScenario(api, prefix="bench")
    proc = None
    try:
        aws.eks_cluster("blue")
        tags = {"kubernetes.io/cluster/blue": "owned", nth.MANAGED_TAG: ""}
        hooks = [{"name": "drain", "transition": TERMINATING, "heartbeat_timeout": 300}]
        (iid,) = aws.asg("ng-singleton", size=1, tags=tags, hooks=hooks)
        (node,) = aws.nodes_for(k8s, [iid])
        (spare,) = k8s.add_nodes(1)
        k8s.deployment_on("web", 1, [node], spare, grace=1)
        k8s.pdb("web", {"app": "web"}, min_available=1)
        k8s.wait_pdb("web", disruptions_allowed=0)
        queue_url = nth.create_queue(aws)
        proc = nth.start(bed, api, queue_url, workdir)
        proc.wait_started()
        token = aws.start_lifecycle_action("ng-singleton", "drain", iid)
        event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-singleton", hook="drain",
                                        token=token)  # fmt: skip
        with ReadyWatch(bed, k8s, "app=web") as watch:
            t0 = time.monotonic()
            nth.send_events(aws, queue_url, [nth.unique_id(event)])
            action: dict[str, Any] = {}
            while time.monotonic() - t0 < timeout + 120 and proc.alive():
                action = next(a for a in aws.lifecycle_actions() if a["instance_id"] == iid)
                if action["state"] != "ACTIVE":
                    break
                time.sleep(1)
            took = time.monotonic() - t0
        left = [p for p in k8s.pods("app=web", node=node) if p.metadata.deletion_timestamp is None]
        replicas = k8s.apps.read_namespaced_deployment("web", k8s.ns).spec.replicas
        msgs = [str(ln.get("message", "")) for ln in proc.lines() if ln.get("level") in ("error", "warn", "info")]
        last = next(
            (m for m in reversed(msgs) if "drain" in m.lower() or "evict" in m.lower()), msgs[-1] if msgs else ""
        )
        hook = f"hook {action.get('state')} {action.get('result') or ''}".strip()
        return (
            f"| aws-node-termination-handler 1.25.1 | {hook} | {took:.1f} s | {'yes' if not left else 'no'} | "
            f"{min(watch.counts)} | {replicas} | `{last[:100]}` |"
        )
    finally:
        if proc is not None:
            proc.stop()
        k8s.cleanup()
        api.close()


def command(tool: str, kubeconfig: str, node: str, timeout: int) -> list[str]:
    if tool == "kubectl":
        return [KUBECTL, "--kubeconfig", kubeconfig, "drain", node, "--ignore-daemonsets", f"--timeout={timeout}s"]
    py = [sys.executable, "-m", "drain_orchestrator.cli.drain"]
    return [*py, "drain", node, "--kubeconfig", kubeconfig, "--surge", "annotated", "--timeout", str(timeout)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timeout", type=int, default=60, help="each tool's --timeout, seconds")
    p.add_argument("--nth", action="store_true", help="also aws-node-termination-handler (built once, needs Go)")
    a = p.parse_args(argv)
    bed, owned = harness.attach_or_start(Path(tempfile.mkdtemp(prefix="bench-", dir="/tmp")))
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'lambda_src'}:{REPO}"}
    rows = []
    try:
        for tool in ("kubectl", "drain-orchestrator"):
            api = bed.admin_api_client()
            k8s = KubeScenario(api, prefix="bench")
            try:
                node = fixture(k8s)
                cmd = command(tool, str(bed.kubeconfig), node, a.timeout)
                with ReadyWatch(bed, k8s, "app=web") as watch:
                    t0 = time.monotonic()
                    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
                    took = time.monotonic() - t0
                    time.sleep(2)  # let the watch see the scale-in after the drain
                left = [p for p in k8s.pods("app=web", node=node) if p.metadata.deletion_timestamp is None]
                replicas = k8s.apps.read_namespaced_deployment("web", k8s.ns).spec.replicas
                tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
                rows.append(
                    f"| {tool} | {proc.returncode} | {took:.1f} s | {'yes' if not left else 'no'} | "
                    f"{min(watch.counts)} | {replicas} | `{tail[0][:100]}` |"
                )
            finally:
                k8s.cleanup()
                api.close()
        if a.nth:
            rows.append(nth_row(bed, a.timeout, Path(tempfile.mkdtemp(prefix="nth-singleton-"))))
    finally:
        if owned:
            bed.stop()
    print("| tool | exit | wall time | node emptied | fewest Ready replicas seen | replicas after | last line |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

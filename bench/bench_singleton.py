"""A single-replica Deployment under a PodDisruptionBudget minAvailable 1, drained by `kubectl drain` and by
`drain-orchestrator drain --surge annotated`, on the local test bed (real controllers and scheduler; kwok makes
pods Ready). A fresh namespace and two fresh nodes each run: the pod on one, room for its replacement on the other.

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

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "lambda_src")]

from tests.integration.surge_support import ReadyWatch, opt_in  # noqa: E402
from tests.testbed.kube import KubeScenario  # noqa: E402

from bench import harness  # noqa: E402

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")


def fixture(k8s: KubeScenario) -> str:
    node, spare = k8s.add_nodes(2)
    k8s.deployment_on("web", 1, [node], spare, grace=1)
    opt_in(k8s, "web")
    k8s.pdb("web", {"app": "web"}, min_available=1)
    k8s.wait_pdb("web", disruptions_allowed=0)
    return node


def command(tool: str, kubeconfig: str, node: str, timeout: int) -> list[str]:
    if tool == "kubectl":
        return [KUBECTL, "--kubeconfig", kubeconfig, "drain", node, "--ignore-daemonsets", f"--timeout={timeout}s"]
    py = [sys.executable, "-m", "drain_orchestrator.drain_cli"]
    return [*py, "drain", node, "--kubeconfig", kubeconfig, "--surge", "annotated", "--timeout", str(timeout)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timeout", type=int, default=60, help="each tool's --timeout, seconds")
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
    finally:
        if owned:
            bed.stop()
    print("| tool | exit | wall time | node emptied | fewest Ready replicas seen | replicas after | last line |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

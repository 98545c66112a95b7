"""`drain-orchestrator drain|uncordon` as a user runs it: a separate process, the bed's kubeconfig."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli_support import run_cli
from tests.integration.drain_support import pods_on

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def cli(testbed: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "--kubeconfig", str(testbed.kubeconfig))


def test_drain_prints_kubectl_like_progress_and_exits_0_when_drained(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 2)
    names = sorted(p.metadata.name for p in k8s.wait_pods_ready("app=web", 2))
    k8s.daemonset("ds")
    k8s.wait_pods_ready("app=ds", 1)
    proc = cli(testbed, "drain", a, "--timeout", "60")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"node/{a} cordoned"
    assert any(x.startswith("Warning: ignoring DaemonSet-managed Pods: ") for x in lines)
    assert sorted(x.split("/")[-1] for x in lines if x.startswith("evicting pod ")) == names
    assert sorted(x.split()[0].split("/")[1] for x in lines if x.endswith(" evicted")) == names
    assert f"node/{a} drained" in lines
    assert lines[-1].startswith(f"drained node/{a}: 2 evicted, 1 skipped;")
    assert [p.metadata.name.startswith("ds-") for p in pods_on(k8s, a)] == [True]

    proc = cli(testbed, "uncordon", a)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"node/{a} uncordoned")
    assert not k8s.core.read_node(a).spec.unschedulable


def test_drain_exits_1_and_explains_a_refusal(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.bare_pod("lonely", node=a)
    k8s.wait_for(lambda: any(k8s.pod_ready(p) for p in pods_on(k8s, a)), what="pod ready")
    proc = cli(testbed, "drain", a, "--timeout", "10")
    assert proc.returncode == 1
    assert (
        f"error: cannot delete Pods that declare no controller (use --force to override): {k8s.ns}/lonely"
        in proc.stdout
    )
    assert f"NOT drained: node/{a}" in proc.stdout
    assert len(pods_on(k8s, a)) == 1

    dry = cli(testbed, "drain", a, "--force", "--dry-run")
    assert dry.returncode == 0 and "(server dry run)" in dry.stdout
    assert len(pods_on(k8s, a)) == 1


def test_drain_surges_a_singleton_under_its_pdb_and_takes_the_surge_back(testbed: Any, k8s: Any) -> None:
    a, spare = k8s.add_nodes(2)
    k8s.deployment_on("web", 1, [a], spare, grace=1)
    k8s.pdb("web", {"app": "web"}, min_available=1)
    k8s.wait_pdb("web", disruptions_allowed=0)
    proc = cli(testbed, "drain", a, "--surge", "always", "--timeout", "60")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith(f"surge: Deployment {k8s.ns}/web: ")]
    assert "restored" in line and "replicas 1 -> 2" in line, line
    assert k8s.apps.read_namespaced_deployment("web", k8s.ns).spec.replicas == 1
    assert not pods_on(k8s, a)

    bad = cli(testbed, "drain", a, "--surge", "sometimes")
    assert bad.returncode == 2 and "--surge: invalid choice: 'sometimes'" in bad.stderr

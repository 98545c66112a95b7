"""Parity with `kubectl drain`: on identical fixtures (one node each), the pods our drain evicts, skips and
refuses are the ones kubectl evicts, skips and refuses with the matching flags."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

from tests.integration.drain_support import drain, drainer, pods_on

pytestmark = pytest.mark.integration

KUBECTL = "/usr/bin/kubectl"
ROLES = ("unmanaged", "mirror", "terminal", "scratch", "web", "ds")
# kubectl 1.32 prints "cannot delete cannot delete <msg>: ns/a, ns/b" inside its aggregate error
_CANNOT = re.compile(r"cannot delete (?!cannot delete)(.+?\)): (.+?)(?=, cannot delete |\]|$)", re.M)


def role(pod_name: str) -> str:
    return pod_name.split("-", 1)[0]


def build(k8s: Any, node: str, tag: str) -> None:
    k8s.bare_pod(f"unmanaged-{tag}", node=node)
    k8s.bare_pod(f"mirror-{tag}", node=node, metadata_extra={"annotations": {"kubernetes.io/config.mirror": "x"}})
    k8s.bare_pod(f"terminal-{tag}", node=node, spec_extra={"restartPolicy": "Never"})
    k8s.bare_pod(f"scratch-{tag}", node=node, spec_extra={"volumes": [{"name": "s", "emptyDir": {}}]})
    k8s.deployment(f"web-{tag}", 2, nodes=[node])


def fixture(k8s: Any) -> tuple[str, str]:
    ours, theirs = k8s.add_nodes(2)
    k8s.daemonset("ds")
    build(k8s, ours, "o")
    build(k8s, theirs, "k")
    for tag in ("o", "k"):
        k8s.wait_pods_ready(f"app=web-{tag}", 2)
        k8s.core.patch_namespaced_pod_status(f"terminal-{tag}", k8s.ns, {"status": {"phase": "Succeeded"}})
    k8s.wait_pods_ready("app=ds", 2)
    for node in (ours, theirs):
        k8s.wait_for(lambda n=node: len(pods_on(k8s, n)) == 7, what=f"7 pods on {node}")
    return ours, theirs


def kubectl_drain(testbed: Any, node: str, flags: list[str]) -> dict[str, set[tuple[str, str]]]:
    """Run kubectl drain; return role sets: evicted, refused (role, message), all pods it saw skip."""
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", str(testbed.kubeconfig), "drain", node, "--timeout=90s", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = proc.stdout + proc.stderr
    evicted = {("", role(m.split("/", 1)[1])) for m in re.findall(r"evicting pod (\S+)", out)}
    refused = set()
    for msg, pods in _CANNOT.findall(out):
        refused |= {(role(p.strip().split("/", 1)[1]), msg) for p in pods.split(", ")}
    return {"evicted": evicted, "refused": refused, "exit": {("", str(proc.returncode))}, "out": {("", out)}}


@pytest.mark.parametrize(
    ("flags", "opts"),
    [
        (["--ignore-daemonsets"], {}),
        (
            ["--ignore-daemonsets", "--force", "--delete-emptydir-data"],
            {"force": True, "delete_emptydir_data": True},
        ),
    ],
    ids=["no-overrides", "force-and-emptydir"],
)
def test_same_pods_evicted_skipped_and_refused_as_kubectl(
    testbed: Any, k8s: Any, flags: list[str], opts: dict[str, bool]
) -> None:
    ours, theirs = fixture(k8s)
    with drainer(testbed) as kube:
        report = drain(kube, ours, timeout=60, **opts)
    k = kubectl_drain(testbed, theirs, flags)
    out = next(iter(k["out"]))[1]

    our_evicted = {role(p.split("/", 1)[1]) for p in report.evicted}
    their_evicted = {r for _, r in k["evicted"]}
    assert our_evicted == their_evicted, out
    our_refused = {(role(r.pod.split("/", 1)[1]), r.reason) for r in report.refused}
    assert our_refused == k["refused"], out
    if not k["refused"]:
        # skipped = seen on the node, neither evicted nor refused (kubectl is silent about mirror pods);
        # with a refusal kubectl evicts nothing at all, which the evicted sets above already compare
        their_skipped = set(ROLES) - their_evicted
        assert {role(s.pod.split("/", 1)[1]) for s in report.skipped} == their_skipped
    # and the end states agree: the same roles are left on each node
    assert sorted(role(p.metadata.name) for p in pods_on(k8s, ours)) == sorted(
        role(p.metadata.name) for p in pods_on(k8s, theirs)
    )
    assert report.drained == (next(iter(k["exit"]))[1] == "0")

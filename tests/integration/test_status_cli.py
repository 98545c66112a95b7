"""`drain-orchestrator status` as an operator runs it: a separate process reaching the cluster through EKS with the
Lambda's role (so under the shipped RBAC), showing what holds a drain: a PDB, a load-balancer target, a volume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from drain_orchestrator.kube.cordon import cordon
from drain_orchestrator.kube.node_records import claim
from drain_orchestrator.kube.rest import Kube
from tests.integration.cli_support import PYTHONPATH, run_cli
from tests.integration.gates_support import VolumeAttachments
from tests.testbed.aws_seed import AwsSeed
from tests.testbed.kube import KubeScenario
from tests.testbed.load_balancers import register, target_group

pytestmark = pytest.mark.integration


def status(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("status", *args, env=env)


def test_status_shows_phase_deadline_and_what_holds_the_drain(aws: AwsSeed, k8s: KubeScenario) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags={"kubernetes.io/cluster/blue": "owned"})
    (node,) = aws.nodes_for(k8s, [iid])
    (quiet,) = k8s.add_nodes(1)
    k8s.deployment("db", 1, nodes=[node])
    (pod,) = k8s.wait_pods_ready("app=db", 1)
    k8s.pdb("db", {"app": "db"}, max_unavailable=0)
    k8s.wait_pdb("db", disruptions_allowed=0)
    tg = target_group(aws, "tg-db", delay=300)
    register(aws, tg, [iid])
    volumes = VolumeAttachments(k8s)
    va = volumes.attach(node, "pv-db")
    kube = Kube(api_client=k8s.api_client)
    cordon(kube, node, reason="asg-terminate", event_id="e-1", deadline=time.time() + 600, now=time.time())
    claim(kube, node, "drain-started", "run-1")
    env, _queue = aws.lambda_env("blue")
    try:
        proc = status(env, "--json")
        assert proc.returncode == 0, proc.stderr
        rows: list[dict[str, Any]] = json.loads(proc.stdout)
        (row,) = [r for r in rows if r["node"] == node]
        assert quiet not in {r["node"] for r in rows}  # not draining: not listed
        assert (row["cluster"], row["phase"], row["kind"], row["instance_id"]) == (
            "blue",
            "drain-started",
            "asg-terminate",
            iid,
        )
        assert 500 < row["seconds_left"] <= 600
        assert row["blocked_pods"] == [f"{k8s.ns}/{pod.metadata.name} (PDB {k8s.ns}/db)"]
        assert row["targets"] == [f"tg-db ({iid}): healthy"]
        assert row["volumes"] == [f"{va} (pv-db)"]
        assert row["errors"] == []

        table = status(env, "--cluster", "blue")
        assert table.returncode == 0, table.stderr
        header, *lines = table.stdout.splitlines()
        assert header.split()[:6] == ["CLUSTER", "NODE", "PHASE", "KIND", "DEADLINE", "LEFT"]
        (line,) = [x for x in lines if node in x]
        assert "drain-started" in line and "blocked by PDB" in line and f"target tg-db ({iid}): healthy" in line

        # a reader that went away (`status --json | head -1` once head has its line): exit 0, no traceback
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            closed = subprocess.run(
                [sys.executable, "-m", "drain_orchestrator.cli", "status", "--json"],
                env={**os.environ, **env, "PYTHONPATH": PYTHONPATH},
                stdout=write_end,
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
                check=False,
            )
        finally:
            os.close(write_end)
        assert (closed.returncode, closed.stderr) == (0, "")

        unset = status({**env, "CLUSTER_NAMES": ""})
        assert unset.returncode == 2 and unset.stderr.startswith("error: CLUSTER_NAMES: required")
        anyone = status({**env, "CLUSTER_NAMES": "*"})
        assert anyone.returncode == 2 and anyone.stderr.startswith("error: no cluster: set CLUSTER_NAMES")
        assert "Traceback" not in unset.stderr + anyone.stderr
    finally:
        volumes.cleanup()

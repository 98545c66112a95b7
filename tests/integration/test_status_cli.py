"""`drain-orchestrator status` as an operator runs it: a separate process reaching the cluster through EKS with the
Lambda's role (so under the shipped RBAC), showing what holds a drain: a PDB, a load-balancer target, a volume; the
instances its clusters' Auto Scaling groups retain; and a cluster it could not read, never as "no drains"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from drain_orchestrator import __version__
from drain_orchestrator.kube.change_marks import record_change
from drain_orchestrator.kube.cordon import cordon
from drain_orchestrator.kube.node_records import claim
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.return_marks import marks_for
from drain_orchestrator.returns import ReturnMark
from drain_orchestrator.scheduled_change import ChangeRecord
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from testbed.load_balancers import register, target_group
from testbed.procs import free_port
from tests.integration.cli_support import PYTHONPATH, run_cli
from tests.integration.gates_support import VolumeAttachments

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
        doc: dict[str, Any] = json.loads(proc.stdout)
        assert doc["version"] == __version__
        read = {
            "cluster": "blue",
            "reachable": True,
            "error": None,
            "retained_error": None,
            "surges_error": None,
            "grants_error": None,
        }
        assert doc["clusters"] == [read]  # the shipped RBAC lets it look for surges left behind too
        # tests beside this one leave surges of their own on the cluster; none of this one's namespace is left behind
        assert [s for s in doc["surges_left_behind"] if s["deployment"].startswith(f"{k8s.ns}/")] == []
        assert doc["retained_instances"] == []
        rows: list[dict[str, Any]] = doc["drains"]
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
        title, header, *lines = table.stdout.splitlines()
        assert title == f"drain-orchestrator {__version__}: read 1 of 1 clusters (blue)"
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


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def test_status_lists_pending_returns_with_their_execution_and_when(aws: AwsSeed, k8s: KubeScenario) -> None:
    """Cordons written as the function writes them: a rebalance's and a reboot change's carry a return mark, an
    operator's none."""
    aws.eks_cluster("blue")
    rebalanced, rebooted, operators = k8s.add_nodes(3)
    kube = Kube(api_client=k8s.api_client)
    now = time.time()
    rebalance = ReturnMark("run-r", "ev-r", "rebalance", now, case="rebalance")
    cordon(kube, rebalanced, reason="rebalance", event_id="ev-r", now=now, marks=marks_for(rebalance))
    arn = "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED/x"
    end = now + 7200
    record_change(kube, rebooted, ChangeRecord(arn, now, "upcoming", now + 3600, end))
    reboot = ReturnMark("run-s", arn, "scheduled-change", now, case="reboot")
    cordon(kube, rebooted, reason="scheduled-change", event_id="ev-s", now=now, marks=marks_for(reboot))
    cordon(kube, operators, reason="spot-interruption", event_id="ev-t", now=now)
    env, _queue = aws.lambda_env("blue")
    env["REBALANCE_RETURN_SECONDS"] = "900"

    proc = status(env, "--json", "--no-aws")
    assert proc.returncode == 0, proc.stderr
    rows = {r["node"]: r for r in json.loads(proc.stdout)["drains"]}
    assert rows[rebalanced]["pending_return"] == {
        "run": "run-r",
        "kind": "rebalance",
        "event": "ev-r",
        "cordoned_at": _iso(now),
        "returns_at": _iso(now + 900),
        "terms": "unless an interruption, termination or state change follows",
    }
    assert rows[rebooted]["pending_return"] == {
        "run": "run-s",
        "kind": "scheduled-change",
        "event": arn,
        "cordoned_at": _iso(now),
        "returns_at": _iso(end),
        "terms": "after its window, once Ready with a new boot",
    }
    assert rows[operators]["pending_return"] is None  # an instance that goes away: nothing returns it

    table = status(env, "--no-aws")
    assert table.returncode == 0, table.stderr
    section = table.stdout.split("pending returns to service", 1)[1].splitlines()
    assert section[1].split()[:7] == ["CLUSTER", "NODE", "KIND", "EXECUTION", "CORDONED", "RETURNS", "TERMS"]
    assert any(rebalanced in line and "run-r" in line and _iso(now + 900) in line for line in section)
    assert not any(operators in line for line in section)


def set_lifecycle_state(aws: AwsSeed, instance_id: str, state: str) -> None:
    """What Auto Scaling does to an instance (the emulator's extension: moto keeps every instance InService)."""
    answer = aws._post("/_testbed/autoscaling/instance-state", {"instance_id": instance_id, "state": state})
    assert answer["state"] == state


def test_status_lists_the_instances_the_served_clusters_groups_retain(aws: AwsSeed, k8s: KubeScenario) -> None:
    aws.eks_cluster("blue")
    kept, serving = aws.asg("blue-ng", size=2, tags={"kubernetes.io/cluster/blue": "owned"})
    (by_eks_tag,) = aws.asg("blue-mng", size=1, tags={"eks:cluster-name": "blue"})
    (other,) = aws.asg("green-ng", size=1, tags={"kubernetes.io/cluster/green": "owned"})
    for iid in (kept, by_eks_tag, other):
        set_lifecycle_state(aws, iid, "Terminating:Retained")
    set_lifecycle_state(aws, serving, "Terminating:Wait")  # waiting on its hook: not retained
    (node,) = aws.nodes_for(k8s, [kept])
    kube = Kube(api_client=k8s.api_client)
    cordon(kube, node, reason="asg-terminate", event_id="e-2", deadline=time.time() + 60, now=time.time())
    env, _queue = aws.lambda_env("blue")

    proc = status(env, "--json")

    assert proc.returncode == 0, proc.stderr
    retained = json.loads(proc.stdout)["retained_instances"]
    assert [(r["cluster"], r["asg_name"], r["instance_id"], r["node"]) for r in retained] == [
        ("blue", "blue-mng", by_eks_tag, None),
        ("blue", "blue-ng", kept, node),  # the node the drain marked, still there for inspection
    ]
    assert retained[0]["availability_zone"] == "us-east-1a"

    table = status(env).stdout.splitlines()
    start = table.index("retained instances (Terminating:Retained: inspect, then terminate):")
    assert table[start + 1].split() == ["CLUSTER", "ASG", "INSTANCE", "ZONE", "HEALTH", "NODE"]
    assert [line.split()[2] for line in table[start + 2 :]] == [by_eks_tag, kept]

    skipped = status(env, "--json", "--no-aws")
    assert json.loads(skipped.stdout)["retained_instances"] == []  # no AWS lookups at all


def test_status_says_so_when_a_cluster_cannot_be_read(aws: AwsSeed, k8s: KubeScenario, testbed: Testbed) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags={"kubernetes.io/cluster/blue": "owned"})
    (node,) = aws.nodes_for(k8s, [iid])
    kube = Kube(api_client=k8s.api_client)
    cordon(kube, node, reason="spot-interruption", event_id="e-3", deadline=time.time() + 120, now=time.time())
    env, _queue = aws.lambda_env("blue")

    # a served cluster missing from EKS: the cluster that was read is still listed, the other one said unknown
    both = status({**env, "CLUSTER_NAMES": "blue,ghost"})
    assert both.returncode == 1
    assert "error: cluster ghost: could not be read:" in both.stderr and "Traceback" not in both.stderr
    title, *lines = both.stdout.splitlines()
    assert title == f"drain-orchestrator {__version__}: read 1 of 2 clusters (blue)"
    assert any(line.startswith("blue ") and node in line for line in lines)
    assert lines[-1].startswith("error: cluster ghost could not be read, its drains are unknown:")

    only = status({**env, "CLUSTER_NAMES": "ghost"})
    assert only.returncode == 1
    assert "no drains" not in only.stdout
    assert only.stdout.splitlines() == [
        f"drain-orchestrator {__version__}: read 0 of 1 clusters",
        only.stdout.splitlines()[-1],
    ]
    assert only.stdout.splitlines()[-1].startswith("error: cluster ghost could not be read")
    doc = json.loads(status({**env, "CLUSTER_NAMES": "ghost"}, "--json").stdout)
    (ghost,) = doc["clusters"]
    assert (ghost["cluster"], ghost["reachable"], doc["drains"]) == ("ghost", False, [])
    assert "ResourceNotFoundException" in ghost["error"]  # EKS does not have it


def test_status_says_so_when_the_api_server_is_unreachable(testbed: Testbed, tmp_path: Path) -> None:
    config = yaml.safe_load(testbed.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"  # nothing listens there
    dead = tmp_path / "kubeconfig"
    dead.write_text(yaml.safe_dump(config))

    for args in ((), ("--json",)):
        proc = status({}, "--kubeconfig", str(dead), "--cluster", "blue", "--no-aws", *args)
        assert proc.returncode == 1, proc.stdout
        assert "error: cluster blue: could not be read:" in proc.stderr and "Traceback" not in proc.stderr
        assert "no drains" not in proc.stdout
        if args:
            assert json.loads(proc.stdout)["clusters"][0]["reachable"] is False
        else:
            assert "error: cluster blue could not be read, its drains are unknown" in proc.stdout


def test_status_warns_of_a_group_whose_hook_iam_would_not_let_the_function_answer(
    aws: AwsSeed, k8s: KubeScenario
) -> None:
    aws.eks_cluster("blue")
    (untagged,) = aws.asg("plain-ng", size=1)  # a hook of ours, no cluster tag on the group
    aws.client("ec2").create_tags(Resources=[untagged], Tags=[{"Key": "kubernetes.io/cluster/blue", "Value": "owned"}])
    (tagged,) = aws.asg("blue-ng", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    plain_node, tagged_node = aws.nodes_for(k8s, [untagged, tagged])
    env, _queue = aws.lambda_env("blue")

    proc = status(env, "--json")

    assert proc.returncode == 0, proc.stderr
    (warning,) = json.loads(proc.stdout)["lifecycle_warnings"]
    assert warning.startswith(f"cluster blue: nodes {plain_node}: group plain-ng carries none of the tags")
    assert tagged_node not in warning and "lifecycle-access-denied" in warning
    assert f"warning: {warning}" in status(env).stdout.splitlines()

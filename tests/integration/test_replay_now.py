"""`invoke --now`: a sample event dated in the past is replayed as if sent now, so its deadline lies ahead; as
dated, a Spot warning long past for a running instance is a stale event and nothing is touched."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from drain_orchestrator.kube.cordon import ANN_DEADLINE
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.cli_support import invoke_report, run_cli

pytestmark = pytest.mark.integration


def _invoke(path: Path, env: dict[str, str], *extra: str) -> dict[str, Any]:
    proc = run_cli(
        "invoke", str(path), "--timeout", "120", *extra, env={**env, "POWERTOOLS_LOG_LEVEL": "ERROR"}, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return invoke_report(proc.stdout)


def test_now_moves_a_past_spot_warning_to_the_present(aws: AwsSeed, k8s: KubeScenario, tmp_path: Path) -> None:
    aws.eks_cluster("blue")
    stale, fresh = (aws.instance(tags={"kubernetes.io/cluster/blue": "owned"}) for _ in range(2))
    nodes = aws.nodes_for(k8s, [stale, fresh])
    env, _ = aws.lambda_env("blue")
    paths = []
    for iid in (stale, fresh):
        event = samples.ec2_event("spot-interruption-terminate.json", instance_id=iid)  # dated 2025
        assert event["time"].startswith("2025-")
        paths.append(tmp_path / f"{iid}.json")
        paths[-1].write_text(json.dumps(event))

    old = _invoke(paths[0], env)
    started = time.time()
    now = _invoke(paths[1], env, "--now")

    def deadline_on(node: str) -> float:  # the cordon records the drain's deadline on the node
        stamp = k8s.core.read_node(node).metadata.annotations[ANN_DEADLINE]
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

    # as dated, its moment long past while EC2 reports the instance running: a stale event, nothing touched
    (declined,) = old["result"]["not_acted_on"]
    assert (declined["instance_id"], declined["reason"]) == (stale, "stale-event")
    assert ANN_DEADLINE not in (k8s.core.read_node(nodes[0]).metadata.annotations or {})
    assert not k8s.core.read_node(nodes[0]).spec.unschedulable
    assert started + 100 < deadline_on(nodes[1]) < time.time() + 121  # --now: the warning's two minutes from now
    (drained,) = now["result"]["instances"]
    assert drained["node"] == nodes[1] and drained["result"] == "drained"
    assert json.loads(paths[1].read_text())["time"].startswith("2025-")  # the file itself is left alone

"""`drain-orchestrator invoke EVENT_FILE [--dry-run]`: the handler through the durable local runner, as a process."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.cli_support import invoke_report, run_cli

pytestmark = pytest.mark.integration


def _invoke(event: dict, tmp_path: Path, env: dict[str, str], *extra: str) -> tuple[int, dict]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({**event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
    proc = run_cli(
        "invoke", str(path), "--timeout", "120", *extra, env={**env, "POWERTOOLS_LOG_LEVEL": "ERROR"}, timeout=300
    )
    return proc.returncode, invoke_report(proc.stdout)


def test_invoke_dry_run_reports_and_changes_nothing(aws: AwsSeed, k8s: KubeScenario, tmp_path: Path) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags={"kubernetes.io/cluster/blue": "owned"})
    (node,) = aws.nodes_for(k8s, [iid])
    k8s.deployment("web", 2, nodes=[node])
    k8s.wait_pods_ready("app=web", 2)
    env, _ = aws.lambda_env("blue")
    event = samples.ec2_event("spot-interruption-terminate.json", instance_id=iid)

    code, report = _invoke(event, tmp_path, env, "--dry-run")

    assert code == 0, report
    assert report["status"] == "SUCCEEDED"
    (inst,) = report["result"]["instances"]
    assert inst["node"] == node and inst["report"]["evicted"] == 2  # what would be evicted
    assert not k8s.core.read_node(node).spec.unschedulable  # but nothing was cordoned
    assert len([p for p in k8s.pods("app=web") if p.metadata.deletion_timestamp is None]) == 2


def test_invoke_a_malformed_event_exits_nonzero_with_the_field(aws: AwsSeed, tmp_path: Path) -> None:
    env, _ = aws.lambda_env("blue")
    code, report = _invoke(samples.load("malformed-asg-terminate-missing-instance.json"), tmp_path, env)
    assert code == 1
    assert report["status"] == "FAILED" and "detail.EC2InstanceId" in report["error"]["message"]

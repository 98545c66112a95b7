"""`drain-orchestrator explain`: JSON decisions from the same env as the Lambda, read-only."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from drain_orchestrator.cli import main
from testbed import samples
from tests.integration.ownership_support import action_state, grant

pytestmark = pytest.mark.integration


class Cli:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
        self.tmp_path, self.monkeypatch, self.capsys = tmp_path, monkeypatch, capsys

    def write(self, name: str, data: object) -> str:
        path = self.tmp_path / name
        path.write_text(json.dumps(data))
        return str(path)

    def out(self) -> Any:
        return json.loads(self.capsys.readouterr().out)


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Cli:
    return Cli(tmp_path, monkeypatch, capsys)


def test_explain_prints_decisions_and_changes_nothing(testbed: Any, aws: Any, k8s: Any, cli: Cli) -> None:
    [blue_iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    [node] = aws.nodes_for(k8s, [blue_iid])
    token = aws.start_lifecycle_action("blue-nodes", "drain", blue_iid)
    event = samples.lifecycle_event(
        "asg-terminate.json", instance_id=blue_iid, asg="blue-nodes", hook="drain", token=token
    )
    cli.monkeypatch.setenv("CLUSTER_NAMES", "blue")
    cli.monkeypatch.setenv("LIFECYCLE_HOOK_NAMES", "drain")  # the seeded hook is ours

    code = main(["explain", cli.write("e.json", event), "--kubeconfig", str(testbed.kubeconfig)])

    out = cli.out()
    assert code == 0
    assert out["event"]["kind"] == "asg-terminate"
    assert out["event"]["instance_ids"] == [blue_iid]
    assert out["event"]["deadline"] is not None
    assert out["decisions"] == [
        {
            "instance_id": blue_iid,
            "owned": True,
            "cluster": "blue",
            "reason": "owned-instance-tag",
            "action": "drain",
            "node": node,
            "ec2_state": "running",
            "group": "blue-nodes",
            "lifecycle_state": "Terminating:Wait",
        }
    ]
    age = out["event"]["age"]  # the sample's time is long past: for a hook that changes nothing
    assert age["age_seconds"] > 86_400 and "action" in age["freshness"] and "past_moment_seconds" not in age
    assert out["event"]["respectful_until"] is not None
    assert action_state(aws, blue_iid)["state"] == "ACTIVE"
    assert not k8s.core.read_node(node).spec.unschedulable


def test_explain_reports_no_node_and_other_clusters_through_eks_auth(testbed: Any, aws: Any, cli: Cli) -> None:
    # the CLI runs with whatever credentials the environment has: here the Lambda role's, mapped as in EKS
    creds = aws.lambda_session().get_credentials().get_frozen_credentials()
    cli.monkeypatch.setenv("AWS_ACCESS_KEY_ID", creds.access_key)
    cli.monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", creds.secret_key)
    cli.monkeypatch.setenv("AWS_SESSION_TOKEN", creds.token)
    grant(testbed, aws, "blue")
    [blue_iid] = aws.asg("blue-nodes", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    green_iid = aws.instance(tags={"eks:cluster-name": "green"})
    cli.monkeypatch.setenv("CLUSTER_NAMES", "blue")

    window = samples.health_event([blue_iid, green_iid], start=time.time() + 600)
    code = main(["explain", cli.write("h.json", window)])

    out = cli.out()
    assert code == 0
    assert out["event"]["kind"] == "scheduled-change"
    reasons = {d["instance_id"]: (d["reason"], d["action"], d["node"], d["ec2_state"]) for d in out["decisions"]}
    assert reasons == {
        blue_iid: ("no-node", "skip", None, "running"),
        green_iid: ("other-cluster", "skip", None, "running"),
    }


def test_explain_ignored_and_malformed_events(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setenv("CLUSTER_NAMES", "blue")
    assert main(["explain", str(samples.EVENTS_DIR / "unsupported-ebs-snapshot.json")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["event"]["ignored"], out["decisions"]) == ("unsupported", [])

    assert main(["explain", str(samples.EVENTS_DIR / "malformed-asg-terminate-missing-instance.json")]) == 2
    assert "detail.EC2InstanceId: field required" in capsys.readouterr().err

    monkeypatch.setenv("CLUSTER_NAMES", "a,*")
    assert main(["explain", str(samples.EVENTS_DIR / "asg-terminate.json")]) == 2
    assert "CLUSTER_NAMES" in capsys.readouterr().err


def test_explain_says_a_stale_warning_is_declined_with_its_age(aws: Any, cli: Cli) -> None:
    iid = aws.instance(tags={"kubernetes.io/cluster/blue": "owned"})
    cli.monkeypatch.setenv("CLUSTER_NAMES", "blue")
    warning = samples.ec2_event("spot-interruption-terminate.json", instance_id=iid)
    warning["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1800))

    assert main(["explain", cli.write("old.json", warning), "--no-node-lookup"]) == 0

    out = cli.out()
    (decision,) = out["decisions"]
    assert (decision["reason"], decision["action"], decision["ec2_state"]) == ("stale-event", "skip", "running")
    age = out["event"]["age"]
    assert 1790 < age["age_seconds"] < 1900 and age["stale_if_running"] is True
    assert 1670 < age["past_moment_seconds"] < 1800


def test_explain_warns_when_iam_would_deny_an_owned_instances_hook(aws: Any, cli: Cli) -> None:
    """Owned by its own tag, in a group without the cluster tag the function's policy conditions on."""
    [iid] = aws.asg("untagged-nodes", size=1)
    aws.client("ec2").create_tags(Resources=[iid], Tags=[{"Key": "kubernetes.io/cluster/blue", "Value": "owned"}])
    token = aws.start_lifecycle_action("untagged-nodes", "drain", iid)
    event = samples.lifecycle_event(
        "asg-terminate.json", instance_id=iid, asg="untagged-nodes", hook="drain", token=token
    )
    cli.monkeypatch.setenv("CLUSTER_NAMES", "blue")
    cli.monkeypatch.setenv("LIFECYCLE_HOOK_NAMES", "drain")

    assert main(["explain", cli.write("t.json", event), "--no-node-lookup"]) == 0

    (decision,) = cli.out()["decisions"]
    assert (decision["reason"], decision["action"]) == ("owned-instance-tag", "drain")
    assert "untagged-nodes" in decision["warning"] and "lifecycle-access-denied" in decision["warning"]

"""`drain-orchestrator replay`: a dead-letter message judged by what is true now, sent again only if it still is."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.cli_support import run_cli
from tests.integration.scenario_support import ASG, HOOK, OWNED, blue_asg_node, pods_on, spread

pytestmark = pytest.mark.integration


def _report(stdout: str) -> dict[str, Any]:
    """replay's JSON report: the last document on stdout (a local run prints the handler's lines before it)."""
    start = stdout.rindex("\n{\n") + 1 if "\n{\n" in stdout else 0
    report: dict[str, Any] = json.loads(stdout[start:])
    return report


def _replay(aws: AwsSeed, *args: str) -> tuple[int, dict[str, Any], str]:
    env, _ = aws.lambda_env("blue")
    proc = run_cli("replay", *args, env={**env, "POWERTOOLS_LOG_LEVEL": "ERROR"}, timeout=300)
    return proc.returncode, _report(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def test_a_stale_warning_from_the_delivery_queue_is_shown_and_not_sent_again(
    aws: AwsSeed, k8s: KubeScenario, tmp_path: Path
) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    spread(k8s, node, spare, replicas=2)
    warning = samples.ec2_event("spot-interruption-terminate.json", instance_id=iid)
    warning["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1800))
    received = {"Messages": [{"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": json.dumps(warning)}]}
    (tmp_path / "msg.json").write_text(json.dumps(received))

    code, report, err = _replay(aws, str(tmp_path / "msg.json"), "--local", "--yes", "--no-node-lookup")

    assert code == 0, err
    (decision,) = report["decisions"]
    assert (decision["reason"], decision["ec2_state"]) == ("stale-event", "running")
    assert report["event"]["age"]["age_seconds"] > 1700
    assert (report["still_true"], report["replayed"]) == ([], False)
    assert len(pods_on(k8s, node)) == 2 and not k8s.core.read_node(node).spec.unschedulable


def test_a_failed_invocation_whose_hook_still_waits_is_replayed_and_one_whose_hook_ended_is_not(
    aws: AwsSeed, k8s: KubeScenario, tmp_path: Path
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    token = aws.start_lifecycle_action(ASG, HOOK, iid)
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg=ASG, hook=HOOK, token=token)
    event["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
    record = {"requestPayload": event, "responsePayload": {"errorMessage": "1 of 1 drains failed"}}
    (tmp_path / "record.json").write_text(json.dumps(record))

    code, said, err = _replay(aws, str(tmp_path / "record.json"), "--no-node-lookup")  # without --yes: says only
    assert code == 0, err
    assert said["still_true"] == [iid] and said["would_send"] == {"to": None, "instance_ids": [iid]}
    assert said["decisions"][0]["lifecycle_state"] == "Terminating:Wait"

    code, report, err = _replay(aws, str(tmp_path / "record.json"), "--local", "--yes", "--no-node-lookup")

    assert code == 0, err
    assert report["replayed"] is True and report["execution"]["status"] == "SUCCEEDED"
    (inst,) = report["execution"]["result"]["instances"]
    assert inst["result"] == "drained" and not pods_on(k8s, node)
    assert aws.lifecycle_state(iid) == (ASG, "Terminating:Proceed")

    code, again, err = _replay(aws, str(tmp_path / "record.json"), "--local", "--yes", "--no-node-lookup")
    assert code == 0, err
    assert again["decisions"][0]["reason"] == "action-not-pending" and again["replayed"] is False


def test_replay_from_the_queue_deletes_a_message_nothing_is_true_of_any_more(aws: AwsSeed) -> None:
    aws.eks_cluster("blue")
    iid = aws.instance(tags=OWNED)
    sqs = aws.client("sqs")
    queue = sqs.create_queue(QueueName="delivery-dlq")["QueueUrl"]
    forged = samples.ec2_event("state-change-terminated.json", instance_id=iid)  # EC2: the instance runs
    sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(forged))

    code, report, err = _replay(aws, "--queue", queue, "--delete", "--no-node-lookup")

    assert code == 0, err
    assert report["decisions"][0]["reason"] == "state-contradicts-event" and report["deleted"] is True
    assert sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0).get("Messages", []) == []


def test_replay_refuses_what_holds_no_event(aws: AwsSeed, tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text(json.dumps({"Messages": []}))
    code, _, err = _replay(aws, str(tmp_path / "empty.json"))
    assert code == 2 and "no message in it" in err
    code, _, err = _replay(aws, str(tmp_path / "empty.json"), "--yes")
    assert code == 2 and "--function FN or --local" in err

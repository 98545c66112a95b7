"""Instance facts over HTTP (moto server): a bad id never hides a good one, and a Health event naming thousands
of instances is decided in bounded checkpoints, EC2 calls and log lines (the real handler, durable local runner)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from drain_orchestrator.aws.clients import ec2_client
from drain_orchestrator.aws.ec2 import describe_instances
from drain_orchestrator.decide import BotoFacts, decide_event
from drain_orchestrator.events import Interruption, parse_event
from drain_orchestrator.ownership import Reason
from drain_orchestrator.settings import Settings
from drain_orchestrator.workflow_settings import WorkflowSettings
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness

pytestmark = pytest.mark.integration

UNKNOWN = "i-0000000000000dead"
ODD_LENGTH = "i-0123456789"  # a well-formed event id EC2 has never issued


def _counted(client: Any) -> list[int]:
    calls: list[int] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        calls.append(len(params.get("InstanceIds", [])))

    client.meta.events.register("before-parameter-build.ec2.DescribeInstances", count)
    return calls


def test_an_id_with_a_trailing_newline_does_not_hide_the_same_owned_instance(aws: AwsSeed) -> None:
    iid = aws.instance(tags={"kubernetes.io/cluster/blue": "owned"})
    event = parse_event(samples.health_event([f"{iid}\n", iid]))
    assert isinstance(event, Interruption)
    session = aws.lambda_session()
    facts = BotoFacts(ec2_client(session), session.client("autoscaling"))  # type: ignore[arg-type]

    settings = Settings.from_env({"CLUSTER_NAMES": "blue"})
    [assessment] = decide_event(event, settings, facts, now=event.event_time, ws=WorkflowSettings())

    assert (assessment.decision.instance_id, assessment.decision.reason) == (iid, Reason.OWNED_INSTANCE_TAG)


def test_ids_ec2_rejects_are_each_named_and_every_other_id_is_answered(aws: AwsSeed) -> None:
    known = [aws.instance(tags={"eks:cluster-name": name}) for name in ("blue", "green", "blue")]
    client = ec2_client(aws.lambda_session())
    calls = _counted(client)

    facts = describe_instances(client, [known[0], UNKNOWN, known[1], ODD_LENGTH, known[2]])

    assert {i: f is not None for i, f in facts.items()} == {
        known[0]: True,
        UNKNOWN: False,
        known[1]: True,
        ODD_LENGTH: False,
        known[2]: True,
    }
    assert facts[known[1]] is not None and facts[known[1]].instance_tags == {"eks:cluster-name": "green"}
    assert calls == [5, 0]  # the rejected batch, then one filter query (no id list, no message parsing)


def _big_health_event(ids: list[str], start: float) -> dict[str, Any]:
    event = samples.health_event([], start=start)
    event["resources"] = []
    event["detail"]["affectedEntities"] = [{"entityValue": i} for i in ids]
    return event


def test_a_health_event_naming_6000_instances_completes_in_bounded_checkpoints(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    from drain_orchestrator.workflow import runtime

    ec2 = aws.client("ec2")
    others = ec2.run_instances(
        ImageId=aws._ami(),
        MinCount=995,
        MaxCount=995,
        InstanceType="m5.large",
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "eks:cluster-name", "Value": "green"}]}],
    )["Instances"]
    aws.eks_cluster("blue")
    owned = [aws.instance(tags={"kubernetes.io/cluster/blue": "owned"}) for _ in range(5)]
    nodes = aws.nodes_for(k8s, owned)
    unknown = [f"i-{n:017x}" for n in range(0xA0000000, 0xA0000000 + 5000)]
    ids = owned + [i["InstanceId"] for i in others] + unknown
    event = _big_health_event(ids, start=time.time() - 60)
    assert len(json.dumps(event, separators=(",", ":"))) < 256 * 1024  # fits EventBridge, barely
    lam.configure("blue", DRY_RUN="true")
    calls = _counted(runtime.ec2())  # the handler's own (cached) client
    lam.collect()

    started = time.monotonic()
    run = lam.run_in_thread(event, timeout=600)  # run_in_thread asserts every checkpoint is under 256 KB
    elapsed = time.monotonic() - started
    printed = lam.collect()

    assert run.status == "SUCCEEDED", run.error
    assert run.result is not None
    assert sorted(i["node"] for i in run.result["instances"]) == sorted(nodes)
    assert run.result["not_acted_on_count"] == {"other-cluster": 995, "unknown-instance": 5000}
    assert len(run.result["not_acted_on"]) == 20
    lines = printed.stdout.splitlines()
    longest = max(len(line) for line in lines)
    print(
        f"6000-instance Health event: {elapsed:.1f} s, {len(calls)} DescribeInstances calls, "
        f"{len(lines)} stdout lines, longest {longest} bytes"
    )
    # decided 200 at a time: one call per chunk, plus one filter query where EC2 rejected the chunk's ids
    assert len(calls) <= 2 * (6000 // 200)
    assert longest < 8 * 1024 and len(lines) < 400
    assert printed.metric_total("EventsIgnored", reason="unknown-instance") == 5000


def test_hostile_events_fail_or_are_ignored_with_bounded_results_and_log_lines(lam: LambdaHarness) -> None:
    lam.configure("blue")
    spot = samples.ec2_event("spot-interruption-terminate.json", instance_id=UNKNOWN)

    long_type = lam.run({**spot, "detail-type": "y" * 200_000})
    assert long_type.status == "SUCCEEDED" and long_type.result is not None
    assert long_type.result["ignored"] == "unsupported"
    assert "(200000 chars)" in long_type.result["message"] and len(json.dumps(long_type.result)) < 1000
    assert max(len(line) for line in long_type.stdout.splitlines()) < 2000

    nested: dict[str, Any] = {}
    inner = nested
    for _ in range(100):
        inner["x"] = {}
        inner = inner["x"]
    too_deep = lam.run({**spot, "detail": {**spot["detail"], "extra": nested}})
    assert too_deep.status == "FAILED" and "nested deeper than 32 levels" in str(too_deep.error)

    too_big = lam.run({**spot, "detail": {**spot["detail"], "padding": "z" * 300_000}})
    assert too_big.status == "FAILED" and "over EventBridge's event size limit" in str(too_big.error)
    assert max(len(line) for line in too_big.stdout.splitlines()) < 2000

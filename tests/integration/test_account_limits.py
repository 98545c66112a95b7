"""Spot warnings against an account at its limits (testbed/aws/throttle.py): an EC2 request answered
``RequestLimitExceeded`` and a run refused by the Lambda concurrency cap still end in a drained node each. Without the
shared-reads table the handler's own retries take the throttled DescribeInstances, Lambda's requeue the throttled
run; with it, the throttled warnings share a few reads."""

from __future__ import annotations

import time

import pytest
from bench.bench_reclaim import storm_of_warnings

from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import OWNED, pods_on, spread

pytestmark = pytest.mark.integration


def test_a_throttled_describe_and_a_throttled_run_still_drain_every_node(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    ids = [aws.instance(tags=OWNED), aws.instance(tags=OWNED)]
    nodes = aws.nodes_for(k8s, ids)
    (spare,) = k8s.add_nodes(1)
    for i, node in enumerate(nodes):
        spread(k8s, node, spare, name=f"web{i}", replicas=2)
    lam.configure("blue", SHARED_READS_TABLE="")  # as a stack deployed with sharedReads=false
    # a bucket of 2 refilled every 5 s, emptied here: the first execution's DescribeInstances finds it empty
    aws.account_limits(ec2={"non-mutating": [2, 0.2]}, lambda_concurrency=1)
    for _ in range(2):
        aws.client("ec2").describe_instances(InstanceIds=ids)
    try:
        _, results = storm_of_warnings(aws, ids, timeout=240)
        limits = aws.account_limits()
    finally:
        aws.account_limits(ec2=False, lambda_concurrency=None)
    assert [r["status"] for r in results] == ["SUCCEEDED", "SUCCEEDED"], [r["error"] for r in results]
    assert limits["ec2"]["throttled"].get("DescribeInstances", 0) >= 1, limits
    assert limits["lambda"]["throttled"] >= 1 and limits["lambda"]["peak"] == 1, limits
    assert sorted(r["requeues"] for r in results)[-1] >= 1
    for node in nodes:
        spec = k8s.core.read_node(node).spec
        assert spec is not None and spec.unschedulable
    k8s.wait_for(lambda: not any(pods_on(k8s, n) for n in nodes), timeout=60, what="both nodes drained")


def test_warnings_that_ec2_throttles_share_their_reads_and_every_node_is_cordoned(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    aws.eks_cluster("blue")
    ids = [aws.instance(tags=OWNED) for _ in range(8)]
    nodes = aws.nodes_for(k8s, ids)
    lam.configure("blue")
    # one token, then one every 4 s: eight reads of their own would take ~28 s of refill alone
    aws.account_limits(ec2={"non-mutating": [1, 0.25]})
    aws.client("ec2").describe_instances(InstanceIds=ids[:1])
    try:
        started = time.monotonic()
        _, results = storm_of_warnings(aws, ids, timeout=240)
        took = time.monotonic() - started
        limits = aws.account_limits()
    finally:
        aws.account_limits(ec2=False)
    assert [r["status"] for r in results] == ["SUCCEEDED"] * len(ids), [r["error"] for r in results]
    for node in nodes:
        spec = k8s.core.read_node(node).spec
        assert spec is not None and spec.unschedulable
    read = limits["ec2"]["admitted"].get("DescribeInstances", 0)
    refused = limits["ec2"]["throttled"].get("DescribeInstances", 0)
    assert refused >= len(ids) - 1, limits  # the first tries found the bucket empty
    assert read <= 4, f"{read} DescribeInstances read for {len(ids)} warnings in {took:.1f}s: {limits}"

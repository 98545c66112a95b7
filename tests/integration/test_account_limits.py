"""Spot warnings against an account at its limits (testbed/aws/throttle.py): an EC2 request answered
``RequestLimitExceeded`` and a run refused by the Lambda concurrency cap still end in a drained node each; the
handler's adaptive retry takes the throttled DescribeInstances, Lambda's requeue the throttled run."""

from __future__ import annotations

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
    lam.configure("blue")
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

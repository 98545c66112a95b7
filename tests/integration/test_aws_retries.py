"""EC2 and Auto Scaling in botocore's adaptive retry mode, bounded: throttled at every attempt, a call gives up after
ADAPTIVE_ATTEMPTS sends, and never starts an attempt past RETRY_WINDOW_SECONDS; what is left is the steps' durable
retries (deadline-bound). Through the AWS fault proxy in front of the emulator, which answers and counts."""

from __future__ import annotations

import time

import pytest

from drain_orchestrator.aws import clients
from drain_orchestrator.aws.autoscaling import record_heartbeat
from drain_orchestrator.aws.ec2 import describe_instances
from drain_orchestrator.aws.errors import AwsError
from drain_orchestrator.failures import FailureKind
from testbed.aws_seed import AwsSeed
from testbed.faultproxy import FaultProxy

pytestmark = pytest.mark.integration


@pytest.fixture
def through_the_proxy(aws_faults: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> FaultProxy:
    for name, value in aws_faults.env().items():
        monkeypatch.setenv(name, value)
    return aws_faults


def test_ec2_throttled_at_every_attempt_gives_up_after_the_bounded_sends(
    aws: AwsSeed, through_the_proxy: FaultProxy
) -> None:
    iid = aws.instance()
    ec2 = clients.ec2_client(aws.lambda_session())
    assert ec2.meta.config.retries == {"mode": "adaptive", "total_max_attempts": clients.ADAPTIVE_ATTEMPTS}
    through_the_proxy.inject("throttle", ["DescribeInstances"])
    started = time.monotonic()
    with pytest.raises(AwsError) as failed:
        describe_instances(ec2, [iid])
    took = time.monotonic() - started
    assert failed.value.kind is FailureKind.THROTTLED  # to the steps' durable retries, which know the deadline
    assert through_the_proxy.count("DescribeInstances") == clients.ADAPTIVE_ATTEMPTS
    # backoff draws at most 1 + 2 + 4 s; the rate limiter holds a lone caller at most 2 s an attempt
    assert took < clients.RETRY_WINDOW_SECONDS + 4 + 2 + 5, f"{took:.1f} s"
    through_the_proxy.clear()
    assert describe_instances(ec2, [iid])[iid] is not None  # the same client, answered: it recovered


def test_no_attempt_starts_after_the_retry_window(
    aws: AwsSeed, through_the_proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    (iid,) = aws.asg("ng", size=1)
    asc = clients.autoscaling_client(aws.lambda_session())
    assert asc.meta.config.retries == {"mode": "adaptive", "total_max_attempts": clients.ADAPTIVE_ATTEMPTS}
    monkeypatch.setattr(clients, "RETRY_WINDOW_SECONDS", 0.0)  # spent once the first answer is in
    through_the_proxy.inject("server-error", ["RecordLifecycleActionHeartbeat"])
    with pytest.raises(AwsError) as failed:
        record_heartbeat(asc, "ng", "drain-orchestrator", instance_id=iid)
    assert failed.value.kind is FailureKind.UNAVAILABLE
    assert through_the_proxy.count("RecordLifecycleActionHeartbeat") == 1  # botocore would have sent 4


def test_other_services_keep_standard_retries(aws: AwsSeed) -> None:
    eks = clients.eks_client(aws.lambda_session())
    assert eks.meta.config.retries == {"mode": "standard", "total_max_attempts": 7}

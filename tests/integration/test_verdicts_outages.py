"""Every drain reaches a verdict through long outages: the apiserver down mid-drain, AWS throttling the lifecycle
calls. Each outage lasts twice the longest wait between the retries of its failure (failures.RETRY_POLICIES: 30 s
for an unavailable apiserver, 60 s for throttling): the backoff reaches its cap and retries at the cap are refused
too, so what is shown is that the retries go on past any fixed count, not how many minutes they last (the retry
policies have no attempt limit: a drain's retries are bounded by its deadline). Each prints
``MEASURE scenario=... fault_end_to_verdict_s=...`` (``pytest -s``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from drain_orchestrator.failures import RETRY_POLICIES, FailureKind
from testbed.aws_seed import AwsSeed
from testbed.faultproxy import FaultProxy
from testbed.faults import BedFaults
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness
from tests.integration.scenario_support import (
    Background,
    assert_completed_by_function,
    blue_asg_node,
    final_notification,
    instance_summary,
    measure,
    node_events,
    pods_on,
    spread,
    terminate_event,
    wait_evicting,
)

pytestmark = [pytest.mark.integration, pytest.mark.long_running]
APISERVER_DOWN_S = 2 * RETRY_POLICIES[FailureKind.UNAVAILABLE].cap
THROTTLE_S = 2 * RETRY_POLICIES[FailureKind.THROTTLED].cap


@pytest.fixture
def fresh_controllers(bed_faults: BedFaults) -> Iterator[BedFaults]:
    """``bed_faults``, and kube-controller-manager and kube-scheduler restarted after the test (4 s): after a minute
    without the apiserver they lag for about a minute more (the next test's new node kept its not-ready taint 52 s,
    its pods then took 43 s to schedule; with both restarted its setup took 2 s), which the next test on this bed
    would wait out."""
    yield bed_faults
    if bed_faults.running("kube-apiserver"):  # else bed_faults restarts everything in order
        for name in ("kube-controller-manager", "kube-scheduler"):
            bed_faults.stop(name)
            bed_faults.restart(name)


@pytest.mark.timeout(600)
def test_apiserver_down_past_the_retry_cap_mid_drain_recovers_and_completes(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, fresh_controllers: BedFaults
) -> None:
    bed_faults = fresh_controllers
    iid, node, spare = blue_asg_node(aws, k8s)
    k8s.deployment_on("slow", 1, [node], spare, grace=60)  # a terminating pod holds the drain after the cordon
    lam.configure("blue", DRAIN_PASS_SECONDS="10")

    def apiserver_outage() -> float:
        wait_evicting(k8s, node)
        bed_faults.stop("kube-apiserver")
        time.sleep(APISERVER_DOWN_S)  # the outage itself
        # the outage ends when the restart begins: the apiserver may serve the drain before restart() has seen
        # it healthy and returned
        back = time.time()
        bed_faults.restart("kube-apiserver")
        return back

    fault = Background(apiserver_outage)
    run = lam.run(terminate_event(aws, iid), timeout=540, skip_time=False)
    back_at = fault.outcome(timeout=300)
    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "drained"
    action = assert_completed_by_function(aws, iid, "CONTINUE")
    assert action["completed_at"] > back_at  # the verdict waited for the cluster, it did not give up
    final_notification(lam, "completed", "drained")
    assert not pods_on(k8s, node)
    assert "DrainCompleted" in node_events(k8s, node)
    measure(lam, "apiserver-down", fault_end_to_verdict_s=action["completed_at"] - back_at)


@pytest.mark.timeout(600)
def test_aws_throttling_the_lifecycle_calls_past_the_retry_cap_recovers(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, aws_faults: FaultProxy
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    lam.configure("blue", **aws_faults.env())
    event = terminate_event(aws, iid)
    lifecycle_calls = ["RecordLifecycleActionHeartbeat", "CompleteLifecycleAction"]
    fault = aws_faults.inject("throttle", lifecycle_calls, seconds=THROTTLE_S)
    run = lam.run(event, timeout=540, skip_time=False)
    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "drained"
    action = assert_completed_by_function(aws, iid, "CONTINUE")
    assert aws_faults.injected("CompleteLifecycleAction") >= 1
    assert fault.ended_at is not None and action["completed_at"] >= fault.ended_at
    final_notification(lam, "completed", "drained")
    measure(lam, "aws-throttling", fault_end_to_verdict_s=action["completed_at"] - fault.ended_at)

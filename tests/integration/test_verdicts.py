"""Every drain reaches a verdict, whatever fails on the way: the lifecycle action is completed by the function
(CONTINUE when drained or the node is gone, LIFECYCLE_RESULT_ON_FAILURE otherwise), a final notification is
published, and metrics are emitted. One test per fault; the long outages are in test_verdicts_outages.py.

The handler runs on the real clock (``skip_time=False``): a fault's duration must really pass for the workflow's
waits and retries. Each fault scenario prints ``MEASURE scenario=... fault_end_to_verdict_s=...`` (run with
``pytest -s``): from the fault's end to the lifecycle action's completion as the emulator recorded it."""

from __future__ import annotations

import time

import pytest

from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.faultproxy import FaultProxy
from testbed.faults import BedFaults
from testbed.kube import KubeScenario
from tests.integration.lambda_support import ROLE, LambdaHarness
from tests.integration.scenario_support import (
    ASG,
    HOOK,
    Background,
    action_of,
    assert_completed_by_function,
    blue_asg_node,
    final_notification,
    hold_with_pdb,
    instance_summary,
    measure,
    node_events,
    pods_on,
    set_pdb,
    spread,
    terminate_event,
    wait_cordoned,
    wait_drain_started,
    wait_evicting,
)

pytestmark = [pytest.mark.integration, pytest.mark.long_running]


def test_deadline_missed_abandons_before_the_hook_times_out(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """A PDB that never allows a disruption and FORCE_DELETE_ON_DEADLINE=false: heartbeats keep the 30 s hook
    alive for a deadline twice its timeout (60 s: without heartbeats it would time out halfway), then the function
    abandons it -- the hook never times out."""
    deadline = 60
    iid, node, spare = blue_asg_node(aws, k8s, heartbeat_timeout=30)
    hold_with_pdb(k8s, node, spare)
    lam.configure(
        "blue",
        DEADLINE_ASG_TERMINATE_SECONDS=str(deadline),
        FORCE_DELETE_ON_DEADLINE="false",
        LIFECYCLE_RESULT_ON_FAILURE="ABANDON",
        DRAIN_PASS_SECONDS="5",
    )
    event = terminate_event(aws, iid)
    started = time.time()
    run = lam.run(event, skip_time=False)
    assert run.status == "SUCCEEDED", run.error
    inst = instance_summary(run)
    assert inst["result"] == "deadline-missed"
    action = assert_completed_by_function(aws, iid, "ABANDON")
    assert action["heartbeats"] >= 2
    final_notification(lam, "failed", "deadline-missed")
    assert run.metric_total("DrainDeadlineMissed", cluster="blue", kind="asg-terminate") == 1
    assert pods_on(k8s, node)  # the budget was honoured: nothing forced
    measure(lam, "deadline-missed-abandon", deadline_to_verdict_s=action["completed_at"] - (started + deadline))


def test_deleted_notification_topic_does_not_stop_the_drain(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    sns = aws.client("sns")
    deleted = sns.create_topic(Name="deleted-topic")["TopicArn"]
    sns.delete_topic(TopicArn=deleted)
    lam.configure("blue", NOTIFICATION_TOPIC_ARN=deleted)
    run = lam.run(terminate_event(aws, iid), skip_time=False)
    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "drained"
    assert_completed_by_function(aws, iid, "CONTINUE")
    assert run.metric_total("Errors", reason="notify-failed") > 0
    assert "DrainCompleted" in node_events(k8s, node)


def test_access_entry_revoked_for_30_s_mid_drain_recovers(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, bed_faults: BedFaults
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    k8s.deployment_on("slow", 1, [node], spare, grace=20)  # a terminating pod holds the drain for 20 s
    lam.configure("blue", DRAIN_PASS_SECONDS="5")
    role = aws.role_arn(ROLE)

    def revoke_for_30_s() -> float:
        wait_evicting(k8s, node)
        bed_faults.revoke_access_entry("blue", role)
        time.sleep(30)  # the outage itself
        bed_faults.restore_access_entry("blue", role)
        return time.time()

    fault = Background(revoke_for_30_s)
    run = lam.run(terminate_event(aws, iid), skip_time=False)
    restored_at = fault.outcome()
    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "drained"
    action = assert_completed_by_function(aws, iid, "CONTINUE")
    final_notification(lam, "completed", "drained")
    assert not pods_on(k8s, node)
    assert any(not a["allowed"] for a in testbed.authentications())  # the outage was real
    measure(lam, "access-revoked-30s", fault_end_to_verdict_s=action["completed_at"] - restored_at)


def test_access_entry_revoked_for_good_reaches_the_failure_verdict_at_its_deadline(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, bed_faults: BedFaults
) -> None:
    deadline = 40  # the retries of a revoked access entry (every 5-30 s) go on until the verdict must come
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    lam.configure(
        "blue",
        DEADLINE_ASG_TERMINATE_SECONDS=str(deadline),
        LIFECYCLE_RESULT_ON_FAILURE="ABANDON",
        DRAIN_PASS_SECONDS="5",
    )

    def revoke() -> float:
        wait_cordoned(k8s, node)
        bed_faults.revoke_access_entry("blue", aws.role_arn(ROLE))
        return time.time()

    fault = Background(revoke)
    event = terminate_event(aws, iid)
    started = time.time()
    run = lam.run(event, skip_time=False)
    ended = time.time()
    revoked_at = fault.outcome()
    # the verdict first, then the execution fails (so its event reaches the dead-letter queue)
    assert run.status == "FAILED", run.result
    action = assert_completed_by_function(aws, iid, "ABANDON")
    # the last retry is sent at the deadline (were access back, the deadline policy could still act), then the
    # verdict's steps complete the action: seconds after it, each a checkpoint (46.3 s once, with 8 workers' beds)
    assert action["completed_at"] <= started + deadline + 10
    assert action["completed_at"] <= ended
    final_notification(lam, "failed", "failed")
    assert run.metric_total("Errors") > 0
    measure(lam, "access-revoked-for-good", fault_start_to_verdict_s=action["completed_at"] - revoked_at)


@pytest.mark.parametrize("action", ["DescribeInstances", "CompleteLifecycleAction"])
def test_plain_text_503s_from_aws_are_retried(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, aws_faults: FaultProxy, action: str
) -> None:
    """Three plain-text 503s (no AWS error document: botocore neither parses nor retries them) on one call."""
    iid, node, spare = blue_asg_node(aws, k8s)
    spread(k8s, node, spare, replicas=2)
    lam.configure("blue", **aws_faults.env())
    event = terminate_event(aws, iid)
    fault = aws_faults.inject("plain-503", [action], times=3)
    run = lam.run(event, skip_time=False)
    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "drained"
    verdict = assert_completed_by_function(aws, iid, "CONTINUE")
    assert aws_faults.injected(action) == 3 and aws_faults.count(action) >= 4
    final_notification(lam, "completed", "drained")
    assert run.metric_total("LifecycleActionsCompleted") == 1
    # the step that made the first call stopped at its fault; the retries are steps of their own
    names = {str(getattr(op, "name", "") or "") for op in run.operations}
    if action == "DescribeInstances":  # the admit step's decision, then "decide-retry-N"
        # the decide step's first read is one attempt, and a 503 reads again through the usual client: two sends a
        # step, so the three 503s end in the first retry
        assert {"admit", "decide-retry-1"} <= names and "decide-retry-2" not in names, names
    else:  # the verdict step's completion, then "complete-lifecycle-retry-N"; the parts after it on their own
        assert {"verdict", "complete-lifecycle-retry-3", "surge-restore", "report"} <= names, names
    assert fault.ended_at is not None
    measure(lam, f"plain-503-{action}", fault_end_to_verdict_s=verdict["completed_at"] - fault.ended_at)


def test_node_deleted_mid_drain_is_noticed_quickly(aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    lam.configure("blue", DEADLINE_ASG_TERMINATE_SECONDS="150", DRAIN_PASS_SECONDS="5")

    def delete_node() -> float:
        wait_drain_started(k8s, node)
        k8s.core.delete_node(node)
        return time.time()

    fault = Background(delete_node)
    run = lam.run(terminate_event(aws, iid), skip_time=False)
    deleted_at = fault.outcome()
    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "node-gone"
    action = assert_completed_by_function(aws, iid, "CONTINUE")
    assert action["completed_at"] - deleted_at < 20  # noticed by the next pass, not at the 150 s deadline
    final_notification(lam, "completed", "node-gone")
    measure(lam, "node-deleted", fault_end_to_verdict_s=action["completed_at"] - deleted_at)


@pytest.mark.parametrize("result", ["CONTINUE", "ABANDON"])
def test_action_completed_by_someone_else_mid_drain_still_ends_in_a_verdict(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, result: str
) -> None:
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    lam.configure("blue", DRAIN_PASS_SECONDS="5")

    def operator_completes() -> None:
        wait_drain_started(k8s, node)
        aws.complete_lifecycle_action_as("operator", ASG, HOOK, iid, result)
        set_pdb(k8s, "web", max_unavailable=1)  # the drain can now finish

    fault = Background(operator_completes)
    run = lam.run(terminate_event(aws, iid), skip_time=False)
    fault.outcome()
    assert run.status == "SUCCEEDED", run.error
    inst = instance_summary(run)
    assert inst["result"] == "drained"
    assert inst["lifecycle"]["outcome"] == "already-done"
    action = action_of(aws, iid)
    assert (action["state"], action["result"], action["completed_by"]) == (
        "COMPLETED",
        result,
        aws.role_arn("operator"),
    )
    final_notification(lam, "completed", "drained")
    assert run.metric_total("Errors") == 0


def test_pdb_never_satisfiable_is_forced_at_the_deadline_when_allowed(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """FORCE_DELETE_ON_DEADLINE=true; the =false case is test_deadline_missed_abandons_before_the_hook_times_out."""
    iid, node, spare = blue_asg_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)
    lam.configure("blue", DEADLINE_ASG_TERMINATE_SECONDS="20", FORCE_DELETE_ON_DEADLINE="true", DRAIN_PASS_SECONDS="5")
    event = terminate_event(aws, iid)
    started = time.time()
    run = lam.run(event, skip_time=False)
    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "drained"
    action = assert_completed_by_function(aws, iid, "CONTINUE")
    assert run.metric_total("PodsForceDeleted", cluster="blue") >= 1
    assert not pods_on(k8s, node)
    final_notification(lam, "completed", "drained")
    measure(lam, "pdb-forced-at-deadline", deadline_to_verdict_s=action["completed_at"] - (started + 20))

"""Act only on what is true now (docs/reliability.md, "What the orchestrator believes"): a stale, replayed, forged or
superseded event never costs a healthy node its pods, and a lifecycle action is answered by the function, before it
expires, or the reason it cannot be is named.

Each scenario runs the real handler (durable local runner, real clock) against the bed; its verdict is read from
what can be observed: the apiserver's audit log of the function's requests, the emulator's lifecycle actions and
DescribeAutoScalingInstances, the node's taints and the pods."""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.faultproxy import FaultProxy
from testbed.kube import KubeScenario
from tests.iam_support import role_policies
from tests.integration.audit_support import audit_offset, by_verb_and_resource, function_requests
from tests.integration.lambda_support import ROLE, LambdaHarness
from tests.integration.scenario_support import (
    ASG,
    HOOK,
    OWNED,
    Background,
    action_of,
    assert_completed_by_function,
    blue_asg_node,
    blue_instance_node,
    final_notification,
    hold_with_pdb,
    instance_summary,
    measure,
    pods_on,
    set_pdb,
    spread,
    terminate_event,
    wait_drain_started,
)

pytestmark = [pytest.mark.integration, pytest.mark.long_running]


def _ago(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds))


def _destructive(testbed: Testbed, offset: int) -> dict[str, int]:
    """The function's pod deletes and evictions the apiserver let through (2xx) since ``offset``."""
    done = [
        e
        for e in function_requests(testbed, offset)
        if e.get("objectRef", {}).get("resource") == "pods" and 200 <= e.get("responseStatus", {}).get("code", 0) < 300
    ]
    return {k: v for k, v in by_verb_and_resource(done).items() if k.startswith(("delete", "create pods/eviction"))}


def test_a_spot_warning_30_minutes_old_for_a_running_instance_touches_nothing(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_instance_node(aws, k8s)
    hold_with_pdb(k8s, node, spare)  # a budget that allows no disruption: the old rule force-deleted both pods
    before = {p.metadata.uid for p in pods_on(k8s, node)}
    lam.configure("blue")
    warning = samples.ec2_event("spot-interruption-terminate.json", instance_id=iid)
    warning["time"] = _ago(1800)
    offset = audit_offset(testbed)

    run = lam.run(warning, now=False)

    assert run.status == "SUCCEEDED", run.error
    assert run.result["instances"] == []
    (declined,) = run.result["not_acted_on"]
    assert (declined["reason"], declined["owned"]) == ("stale-event", True)
    assert run.metric_total("EventsIgnored", reason="stale-event", kind="spot-interruption") == 1
    assert {p.metadata.uid for p in pods_on(k8s, node)} == before  # no pod deleted, evicted or its grace cut
    assert _destructive(testbed, offset) == {}
    assert not k8s.core.read_node(node).spec.unschedulable


def test_a_terminate_event_replayed_hours_later_respects_every_pdb_while_its_hook_waits(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """The hook (HeartbeatTimeout 3600 s: a 48 h global timeout) still waits; the event's time is 3 hours back and
    DEADLINE_ASG_TERMINATE_SECONDS (the harness's 3600 s) counted from it would be long past: the old rule forced."""
    iid, node, spare = blue_asg_node(aws, k8s, heartbeat_timeout=3600)
    hold_with_pdb(k8s, node, spare)
    before = {p.metadata.uid for p in pods_on(k8s, node)}
    lam.configure("blue", DRAIN_PASS_SECONDS="5")
    event = terminate_event(aws, iid)
    event["time"] = _ago(3 * 3600)
    offset = audit_offset(testbed)

    def relax_after_the_respectful_minimum() -> None:
        wait_drain_started(k8s, node)  # the first pass did not drain: it was held, not forced
        # past MIN_DRAIN_SECONDS (the harness's 10 s) by twice as much again: the deadline policy would be on now,
        # and a pass would have forced, if it were due (the held waits end at the respectful minimum's end)
        time.sleep(25)
        assert {p.metadata.uid for p in pods_on(k8s, node)} == before
        set_pdb(k8s, "web", max_unavailable=1)

    relaxed = Background(relax_after_the_respectful_minimum)
    run = lam.run(event, now=False, skip_time=False)
    relaxed.outcome(timeout=180)

    assert run.status == "SUCCEEDED", run.error
    inst = instance_summary(run)
    assert inst["result"] == "drained" and not inst["report"]["forced"]
    assert_completed_by_function(aws, iid, "CONTINUE")
    # what got through was evictions once the budget allowed them, never a delete
    assert [k for k in _destructive(testbed, offset) if k.startswith("delete")] == []


def test_a_forged_terminated_state_change_for_a_running_instance_adds_no_out_of_service_taint(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    iid, node, spare = blue_instance_node(aws, k8s)
    k8s.deployment_on("web", 2, [node], spare, grace=1)
    lam.configure("blue", OUT_OF_SERVICE_TAINT="true")
    offset = audit_offset(testbed)

    run = lam.run(samples.ec2_event("state-change-terminated.json", instance_id=iid))

    assert run.status == "SUCCEEDED", run.error
    (declined,) = run.result["not_acted_on"]
    assert declined["reason"] == "state-contradicts-event"
    taints = [t.key for t in k8s.core.read_node(node).spec.taints or []]
    assert "node.kubernetes.io/out-of-service" not in taints
    assert not k8s.core.read_node(node).spec.unschedulable
    assert len(pods_on(k8s, node)) == 2 and _destructive(testbed, offset) == {}
    assert not [e for e in function_requests(testbed, offset) if e["verb"] in ("patch", "update")]


def test_a_lifecycle_event_naming_another_group_than_the_instances_is_not_acted_on(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """The instance waits in its own group's hook; the event names another group of the cluster, with the same hook
    name and the real action's token. Auto Scaling says where the instance is: nothing is drained, and the action
    in the instance's real group is left to whoever answers it."""
    iid, node, spare = blue_asg_node(aws, k8s)
    aws.asg("ng-green", size=1, tags=OWNED, hooks=[{"name": HOOK, "heartbeat_timeout": 300}])
    k8s.deployment_on("web", 2, [node], spare, grace=1)
    before = {p.metadata.uid for p in pods_on(k8s, node)}
    lam.configure("blue")
    token = aws.start_lifecycle_action(ASG, HOOK, iid)
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-green", hook=HOOK, token=token)
    offset = audit_offset(testbed)

    run = lam.run(event)

    assert run.status == "SUCCEEDED", run.error
    assert run.result["instances"] == []
    (declined,) = run.result["not_acted_on"]
    assert (declined["reason"], declined["owned"]) == ("group-mismatch", True)
    assert run.metric_total("EventsIgnored", reason="group-mismatch", kind="asg-terminate") == 1
    assert not k8s.core.read_node(node).spec.unschedulable
    assert {p.metadata.uid for p in pods_on(k8s, node)} == before
    assert not [e for e in function_requests(testbed, offset) if e["verb"] in ("create", "patch", "update", "delete")]
    action = action_of(aws, iid)
    assert (action["state"], action["heartbeats"], action["completed_by"]) == ("ACTIVE", 0, None), action
    assert aws.lifecycle_state(iid) == (ASG, "Terminating:Wait")
    assert _calls(aws, "RecordLifecycleActionHeartbeat") == _calls(aws, "CompleteLifecycleAction") == 0


def test_a_short_lived_hook_is_completed_abandon_by_the_function_before_it_expires(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """GlobalTimeout 40 s (the bed's knob; AWS's smallest is 50 min) and DefaultResult CONTINUE: a drain that ran
    to the hook's own expiry would lose its ABANDON to the timeout's CONTINUE. The function keeps the time completing
    the action needs (a third of the 30 s HeartbeatTimeout) free before the expiry, whatever the expiry's length."""
    aws.eks_cluster("blue")
    hook = {"name": HOOK, "heartbeat_timeout": 30, "default_result": "CONTINUE"}
    (iid,) = aws.asg(ASG, size=1, tags=OWNED, hooks=[hook])
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    aws.set_hook_global_timeout(ASG, HOOK, 40)
    hold_with_pdb(k8s, node, spare)
    lam.configure("blue", FORCE_DELETE_ON_DEADLINE="false", LIFECYCLE_RESULT_ON_FAILURE="ABANDON")

    run = lam.run(terminate_event(aws, iid), skip_time=False)

    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "deadline-missed"
    action = assert_completed_by_function(aws, iid, "ABANDON")
    assert action["completed_at"] < action["global_deadline"]
    assert len(pods_on(k8s, node)) == 2  # the budget was honoured: nothing forced
    measure(lam, "short-hook-abandon", before_expiry_s=action["global_deadline"] - action["completed_at"])


def test_an_owned_node_whose_group_iam_denies_ends_lifecycle_access_denied_within_a_minute(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, template: dict[str, Any]
) -> None:
    """The instance carries the cluster tag, its group does not: the synthesized policy allows the lifecycle calls
    only on groups tagged for the cluster, and the emulator decides the role's calls by that policy."""
    aws.eks_cluster("blue")
    hook = {"name": HOOK, "heartbeat_timeout": 30}
    (iid,) = aws.asg("untagged", size=1, hooks=[hook])
    aws.client("ec2").create_tags(Resources=[iid], Tags=[{"Key": k, "Value": v} for k, v in OWNED.items()])
    (node,) = aws.nodes_for(k8s, [iid])
    (spare,) = k8s.add_nodes(1)
    hold_with_pdb(k8s, node, spare)
    lam.configure("blue", DRAIN_PASS_SECONDS="5")
    aws.enforce_iam(ROLE, role_policies(template, os.environ["NOTIFICATION_TOPIC_ARN"]))
    token = aws.start_lifecycle_action("untagged", HOOK, iid)
    event = samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="untagged", hook=HOOK, token=token)
    started = time.time()

    run = lam.run(event, skip_time=False)

    took = time.time() - started
    assert run.status == "FAILED"  # after the verdict: the event goes to the dead-letter queue, to replay once fixed
    assert f"{iid}: lifecycle-access-denied" in str(run.error), run.error
    assert took < 60, took
    assert run.metric_total("LifecycleAccessDenied", cluster="blue", kind="asg-terminate") == 1
    final_notification(lam, "failed", "lifecycle-access-denied")
    action = action_of(aws, iid)
    assert action["completed_by"] != aws.role_arn(ROLE) and action["heartbeats"] == 0
    assert _heartbeats(aws) == 1  # the first AccessDenied ended the heartbeats: not retried
    assert not [r for r in aws.requests() if r["action"] == "CompleteLifecycleAction"]


def test_a_completion_iam_denies_ends_lifecycle_access_denied_after_one_call(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, template: dict[str, Any]
) -> None:
    """The group carries the cluster tag, so the synthesized policy allows its heartbeats; an explicit Deny on
    CompleteLifecycleAction (what an SCP or a permission boundary can add) refuses the answer alone. The drain
    finishes, the one completion is refused, and that first AccessDenied names the verdict: no retries of it."""
    iid, node, spare = blue_asg_node(aws, k8s, heartbeat_timeout=30)
    spread(k8s, node, spare, replicas=2)
    lam.configure("blue")
    deny = {"Effect": "Deny", "Action": "autoscaling:CompleteLifecycleAction", "Resource": "*"}
    policies = role_policies(template, os.environ["NOTIFICATION_TOPIC_ARN"])
    aws.enforce_iam(
        ROLE, [*policies, {"name": "deny-completion", "policy": {"Version": "2012-10-17", "Statement": [deny]}}]
    )

    run = lam.run(terminate_event(aws, iid), skip_time=False)

    assert run.status == "FAILED"  # after the verdict: the event goes to the dead-letter queue, to replay once fixed
    assert f"{iid}: lifecycle-access-denied" in str(run.error), run.error
    assert run.metric_total("LifecycleAccessDenied", cluster="blue", kind="asg-terminate") == 1
    final_notification(lam, "failed", "lifecycle-access-denied")
    assert pods_on(k8s, node) == []  # the drain itself went through
    action = action_of(aws, iid)
    assert action["state"] == "ACTIVE" and action["heartbeats"] >= 1, action  # heartbeats were allowed
    assert _calls(aws, "CompleteLifecycleAction") == 1  # the first AccessDenied ended it: not retried


def test_a_group_deleted_mid_drain_ends_as_a_lifecycle_outcome_and_the_execution_succeeds(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    """Deleted with ForceDelete (its instances terminate without their hooks): the heartbeats stop at the first
    answer that says so, nothing is completed, and the drain gets what a state change would (20 s here)."""
    iid, node, spare = blue_asg_node(aws, k8s, heartbeat_timeout=30)
    hold_with_pdb(k8s, node, spare)
    lam.configure("blue", DRAIN_PASS_SECONDS="5", DEADLINE_STATE_CHANGE_SECONDS="20", FORCE_DELETE_ON_DEADLINE="false")

    def delete_the_group() -> tuple[float, int]:
        wait_drain_started(k8s, node)
        aws.client("autoscaling").delete_auto_scaling_group(AutoScalingGroupName=ASG, ForceDelete=True)
        return time.time(), _heartbeats(aws)

    deleted = Background(delete_the_group)
    run = lam.run(terminate_event(aws, iid), skip_time=False)
    deleted_at, beats_before = deleted.outcome(timeout=120)

    assert run.status == "SUCCEEDED", run.error
    inst = instance_summary(run)
    assert inst["lifecycle"] == {"outcome": "group-gone", "result": None}
    assert inst["result"] == "deadline-missed"  # the budget held; the instance goes with its group
    notes = final_notification(lam, "failed", "deadline-missed")
    assert next(n for n in notes if n.get("phase") == "failed")["lifecycle"]["outcome"] == "group-gone"
    assert run.metric_total("Errors", reason="complete-lifecycle-failed") == 0
    assert _heartbeats(aws) - beats_before <= 2  # the flow's and a pass's thread each learn it once: no retry loop
    assert not [r for r in aws.requests() if r["action"] == "CompleteLifecycleAction"]
    took = time.time() - deleted_at
    assert took < 60, took  # noticed at the next heartbeat (10 s), then the 20 s a state change gets
    measure(lam, "group-deleted", deletion_to_verdict_s=took)


def _heartbeats(aws: AwsSeed) -> int:
    return _calls(aws, "RecordLifecycleActionHeartbeat")


def _calls(aws: AwsSeed, action: str) -> int:
    return sum(r["count"] for r in aws.requests() if r["action"] == action)


def test_heartbeats_refused_with_validation_error_back_off_and_resume(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, aws_faults: FaultProxy
) -> None:
    """50 s of ValidationError on every heartbeat of a 60 s hook (a beat every 20 s): the refused beats come further
    and further apart (2, 4, 8 s ...), yet more often again as the hook's timeout nears, so the hook never lapses;
    a fixed retry (every 2 s in a step, 5 s between steps) never leaves a gap of 8 s. Once the budget relaxes the
    drain completes the hook."""
    iid, node, spare = blue_asg_node(aws, k8s, heartbeat_timeout=60)
    hold_with_pdb(k8s, node, spare)
    lam.configure("blue", DRAIN_PASS_SECONDS="5", **aws_faults.env())

    def refuse_then_relax() -> None:
        wait_drain_started(k8s, node)
        aws_faults.inject("validation", ["RecordLifecycleActionHeartbeat"], seconds=50)
        time.sleep(60)  # the fault and a heartbeat after it
        set_pdb(k8s, "web", max_unavailable=1)

    fault = Background(refuse_then_relax)
    run = lam.run(terminate_event(aws, iid), skip_time=False)
    fault.outcome(timeout=240)

    assert run.status == "SUCCEEDED", run.error
    assert instance_summary(run)["result"] == "drained"
    action = assert_completed_by_function(aws, iid, "CONTINUE")  # never lapsed
    refused = aws_faults.injected_times("RecordLifecycleActionHeartbeat")
    gaps = [round(b - a, 1) for a, b in itertools.pairwise(refused)]
    assert len(refused) >= 3 and max(gaps) >= 8, gaps  # backed off
    measure(lam, "heartbeat-validation-error", refused_beats=len(refused), longest_gap_s=max(gaps))
    assert action["heartbeats"] >= 2

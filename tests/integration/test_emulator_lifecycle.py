"""The emulator's Auto Scaling lifecycle API is no kinder than AWS's documented one (testbed/aws/autoscaling.py):
DescribeLifecycleHooks reports GlobalTimeout as AWS computes it, an action that outlives it times out with the
hook's DefaultResult, DescribeAutoScalingInstances reports each instance's real LifecycleState, calls on a deleted
group fail, and IAM installed for a role denies what its policy does not allow (testbed/aws/iam.py)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from testbed.aws_seed import LAUNCHING, TERMINATING, AwsSeed
from tests.integration.lambda_support import ROLE

pytestmark = pytest.mark.integration


def _hook(heartbeat: int, default: str = "ABANDON", transition: str = TERMINATING) -> dict[str, Any]:
    return {"name": "drain", "transition": transition, "heartbeat_timeout": heartbeat, "default_result": default}


def test_global_timeout_is_reported_as_aws_computes_it(aws: AwsSeed) -> None:
    aws.asg("short", size=0, hooks=[_hook(30)])
    aws.asg("long", size=0, hooks=[_hook(7200)])
    asc = aws.client("autoscaling")

    def reported(group: str) -> int:
        (hook,) = asc.describe_lifecycle_hooks(AutoScalingGroupName=group)["LifecycleHooks"]
        return int(hook["GlobalTimeout"])

    assert reported("short") == 3000  # 100 x HeartbeatTimeout
    assert reported("long") == 172800  # 48 h


def test_an_action_past_its_global_timeout_times_out_with_the_default_result_whatever_the_heartbeats(
    aws: AwsSeed,
) -> None:
    (iid,) = aws.asg("ng-1", size=1, hooks=[_hook(30, default="CONTINUE")])
    aws.set_hook_global_timeout("ng-1", "drain", 4)
    asc = aws.client("autoscaling")
    (hook,) = asc.describe_lifecycle_hooks(AutoScalingGroupName="ng-1")["LifecycleHooks"]
    assert hook["GlobalTimeout"] == 4
    aws.start_lifecycle_action("ng-1", "drain", iid)
    assert aws.lifecycle_state(iid) == ("ng-1", "Terminating:Wait")
    asc.record_lifecycle_action_heartbeat(AutoScalingGroupName="ng-1", LifecycleHookName="drain", InstanceId=iid)
    deadline = time.time() + 30
    while aws.lifecycle_state(iid) != ("ng-1", "Terminating:Proceed"):
        assert time.time() < deadline, "the action never timed out"
        time.sleep(0.5)
    (action,) = aws.lifecycle_actions()
    assert (action["state"], action["result"], action["completed_by"]) == ("TIMED_OUT", "CONTINUE", "timeout")
    assert action["completed_at"] == pytest.approx(action["global_deadline"])
    with pytest.raises(ClientError) as err:  # a heartbeat does not bring it back
        asc.record_lifecycle_action_heartbeat(AutoScalingGroupName="ng-1", LifecycleHookName="drain", InstanceId=iid)
    assert err.value.response["Error"]["Code"] == "ValidationError"


def test_describe_auto_scaling_instances_follows_each_action(aws: AwsSeed) -> None:
    ids = aws.asg("ng-2", size=3, hooks=[_hook(300), {**_hook(300, transition=LAUNCHING), "name": "launch"}])
    leaving, abandoned, joining = ids
    asc = aws.client("autoscaling")
    assert {aws.lifecycle_state(i) for i in ids} == {("ng-2", "InService")}
    aws.start_lifecycle_action("ng-2", "drain", leaving)
    aws.start_lifecycle_action("ng-2", "drain", abandoned)
    aws.start_lifecycle_action("ng-2", "launch", joining)
    assert [aws.lifecycle_state(i) for i in ids] == [
        ("ng-2", "Terminating:Wait"),
        ("ng-2", "Terminating:Wait"),
        ("ng-2", "Pending:Wait"),
    ]
    for iid, hook, result in ((leaving, "drain", "CONTINUE"), (abandoned, "drain", "ABANDON")):
        asc.complete_lifecycle_action(
            AutoScalingGroupName="ng-2", LifecycleHookName=hook, InstanceId=iid, LifecycleActionResult=result
        )
    asc.complete_lifecycle_action(
        AutoScalingGroupName="ng-2", LifecycleHookName="launch", InstanceId=joining, LifecycleActionResult="CONTINUE"
    )
    # AWS: a terminating instance goes on terminating whatever the result
    assert [aws.lifecycle_state(i) for i in ids] == [
        ("ng-2", "Terminating:Proceed"),
        ("ng-2", "Terminating:Proceed"),
        ("ng-2", "InService"),
    ]
    assert aws.lifecycle_state(aws.instance()) is None  # in no group: absent from the answer


def test_lifecycle_calls_on_a_deleted_group_fail_with_validation_error(aws: AwsSeed) -> None:
    (iid,) = aws.asg("ng-3", size=1, hooks=[_hook(300)])
    aws.start_lifecycle_action("ng-3", "drain", iid)
    asc = aws.client("autoscaling")
    asc.delete_auto_scaling_group(AutoScalingGroupName="ng-3", ForceDelete=True)
    with pytest.raises(ClientError) as err:
        asc.record_lifecycle_action_heartbeat(AutoScalingGroupName="ng-3", LifecycleHookName="drain", InstanceId=iid)
    assert err.value.response["Error"]["Code"] == "ValidationError"
    assert asc.describe_auto_scaling_groups(AutoScalingGroupNames=["ng-3"])["AutoScalingGroups"] == []


def test_iam_installed_for_a_role_denies_lifecycle_calls_its_tag_condition_does_not_allow(aws: AwsSeed) -> None:
    (ours,) = aws.asg("ng-ours", size=1, tags={"kubernetes.io/cluster/blue": "owned"}, hooks=[_hook(300)])
    (theirs,) = aws.asg("ng-theirs", size=1, hooks=[_hook(300)])
    for group, iid in (("ng-ours", ours), ("ng-theirs", theirs)):
        aws.start_lifecycle_action(group, "drain", iid)
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["autoscaling:RecordLifecycleActionHeartbeat", "autoscaling:CompleteLifecycleAction"],
                "Resource": "*",
                "Condition": {"StringEquals": {"autoscaling:ResourceTag/kubernetes.io/cluster/blue": ["owned"]}},
            }
        ],
    }
    aws.enforce_iam(ROLE, [{"name": "lifecycle", "policy": policy}])
    asc = aws.lambda_session(ROLE).client("autoscaling", endpoint_url=aws.endpoint)
    asc.record_lifecycle_action_heartbeat(AutoScalingGroupName="ng-ours", LifecycleHookName="drain", InstanceId=ours)
    with pytest.raises(ClientError) as err:
        asc.record_lifecycle_action_heartbeat(
            AutoScalingGroupName="ng-theirs", LifecycleHookName="drain", InstanceId=theirs
        )
    assert (err.value.response["Error"]["Code"], err.value.response["ResponseMetadata"]["HTTPStatusCode"]) == (
        "AccessDenied",
        403,
    )
    aws.enforce_iam(ROLE, [])  # lifted
    asc.record_lifecycle_action_heartbeat(
        AutoScalingGroupName="ng-theirs", LifecycleHookName="drain", InstanceId=theirs
    )

"""docs/notifications.md shows what the function really publishes: a lifecycle drain's `started` and `completed`
messages and a drain that missed its deadline (`failed`), run through the real handler on the bed and read back from
the topic, must carry exactly the fields (nested ones too) of the documented example for that phase (`held` and
`stopped`: test_lambda_held.py, test_lambda_approval.py)."""

from __future__ import annotations

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness
from tests.integration.notification_support import assert_shaped_like_its_example, documented

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def test_the_documented_examples_have_the_fields_the_function_publishes(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    examples = documented()
    assert {"started", "completed", "failed"} <= set(examples)  # `held`: test_lambda_held.py, `stopped`: approvals

    aws.eks_cluster("blue")
    (iid,) = aws.asg("ng-blue", size=1, tags=OWNED)
    held = aws.instance(tags=OWNED)
    node, held_node = aws.nodes_for(k8s, [iid, held])
    (spare,) = k8s.add_nodes(1)
    k8s.deployment_on("web", 1, [node], spare, grace=0)
    k8s.deployment("db", 1, nodes=[held_node], grace=0)
    k8s.wait_pods_ready("app=db", 1)
    k8s.pdb("db", {"app": "db"}, max_unavailable=0)
    k8s.wait_pdb("db", disruptions_allowed=0)

    token = aws.start_lifecycle_action("ng-blue", "drain", iid)
    lam.configure("blue", FORCE_DELETE_ON_DEADLINE="false", DEADLINE_STATE_CHANGE_SECONDS="10")
    drained = lam.run(
        samples.lifecycle_event("asg-terminate.json", instance_id=iid, asg="ng-blue", hook="drain", token=token)
    )
    aws.stop_instance(held)
    missed = lam.run(samples.ec2_event("state-change-stopping.json", instance_id=held))
    assert drained.status == missed.status == "SUCCEEDED", (drained.error, missed.error)

    published = {(m["instance_id"], m["phase"]): m for m in lam.notifications()}
    runs = {"started": (iid, "started"), "completed": (iid, "completed"), "failed": (held, "failed")}
    for name, key in runs.items():
        assert_shaped_like_its_example(published[key])
        assert examples[name]["phase"] == published[key]["phase"]
    assert published[(held, "failed")]["result"] == examples["failed"]["result"] == "deadline-missed"
    assert published[(iid, "completed")]["result"] == examples["completed"]["result"] == "drained"

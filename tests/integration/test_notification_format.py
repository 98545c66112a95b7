"""docs/notifications.md shows what the function really publishes: a lifecycle drain's `started` and `completed`
messages and a drain that missed its deadline (`failed`), run through the real handler on the bed and read back from
the topic, must carry exactly the fields (nested ones too) of the documented example for that phase."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import REPO
from testbed.kube import KubeScenario
from tests.integration.lambda_support import LambdaHarness

pytestmark = pytest.mark.integration
DOC = REPO / "docs" / "notifications.md"
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def documented() -> dict[str, dict[str, Any]]:
    """The examples: a ```json block right after a `<!-- example: NAME -->` line."""
    blocks = re.findall(r"<!-- example: ([\w-]+) -->\n```json\n(.*?)\n```", DOC.read_text(encoding="utf-8"), re.S)
    return {name: json.loads(body) for name, body in blocks}


def paths(value: Any, prefix: str = "") -> Iterator[str]:
    """Every key path of a message: ``gates.volumes.held``; a list of objects as ``name[].field``."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield prefix + key
            yield from paths(inner, f"{prefix}{key}.")
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        yield from paths(value[0], prefix[:-1] + "[].")


def test_the_documented_examples_have_the_fields_the_function_publishes(
    aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness
) -> None:
    examples = documented()
    assert set(examples) == {"started", "completed", "failed"}

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
        message = published[key]
        assert sorted(paths(examples[name])) == sorted(paths(message)), (name, json.dumps(message, indent=2))
        assert examples[name]["phase"] == message["phase"]
    assert published[(held, "failed")]["result"] == examples["failed"]["result"] == "deadline-missed"
    assert published[(iid, "completed")]["result"] == examples["completed"]["result"] == "drained"

"""Ownership and the lifecycle permissions agree: for every ownership form a deployment allows, the policy the CDK app
synthesizes lets the function heartbeat and complete exactly the hooks of the groups the function's own rule
(drain_orchestrator.lifecycle_grant) says it may answer — evaluated by IAM's rules (@cloud-copilot/iam-simulate),
not by reading the policy's text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from drain_orchestrator.lifecycle_grant import lifecycle_granted
from drain_orchestrator.settings import Settings
from testbed.aws.calls import AwsCall
from testbed.bed import ACCOUNT_ID, REGION
from tests.iam_support import role_policies, simulate
from tests.infra.conftest import Synthesized

ROLE = f"arn:aws:iam::{ACCOUNT_ID}:role/drain-orchestrator"
LIFECYCLE = ("autoscaling:RecordLifecycleActionHeartbeat", "autoscaling:CompleteLifecycleAction")
GROUP = f"arn:aws:autoscaling:{REGION}:{ACCOUNT_ID}:autoScalingGroup:0f1e2d3c-0000-4000-8000-000000000000"
# the tags a group may carry, each ownership form and near misses
GROUP_TAGS: list[dict[str, str]] = [
    {},
    {"kubernetes.io/cluster/prod": "owned"},
    {"kubernetes.io/cluster/prod": "shared"},
    {"kubernetes.io/cluster/prod": "yes"},
    {"kubernetes.io/cluster/staging": "owned"},
    {"eks:cluster-name": "prod"},
    {"eks:cluster-name": "staging"},
    {"team": "infra"},
    {"team": "web"},
    {"team": "prod"},
]


@pytest.mark.parametrize(
    "context",
    [
        {"clusters": "prod"},
        {"clusters": "prod", "ownershipTag": "team=infra"},
        {"clusters": "prod,batch", "ownershipTag": "team"},
    ],
    ids=["cluster-tags", "ownership-key-value", "ownership-key-names-the-cluster"],
)
def test_the_policy_grants_the_lifecycle_calls_exactly_where_the_function_would_answer(
    synth: Callable[[Mapping[str, Any]], Synthesized], context: dict[str, str]
) -> None:
    policies = role_policies(synth(context).raw, f"arn:aws:sns:{REGION}:{ACCOUNT_ID}:notifications")
    env = {
        "CLUSTER_NAMES": context["clusters"],
        **({"OWNERSHIP_TAG": context["ownershipTag"]} if "ownershipTag" in context else {}),
    }
    settings = Settings.from_env(env)
    calls = [
        AwsCall(ROLE, action, f"{GROUP}:autoScalingGroupName/ng-{i}", tags)
        for i, tags in enumerate(GROUP_TAGS)
        for action in LIFECYCLE
    ]
    verdicts = simulate(policies, calls, ROLE)
    allowed = {(c.action, c.resource): v == "Allowed" for c, v in zip(calls, verdicts, strict=True)}
    for call in calls:
        expected = lifecycle_granted(call.tags, settings)
        assert allowed[(call.action, call.resource)] is expected, (context, call.tags, call.action)
    assert any(allowed.values()) and not all(allowed.values())  # both sides are exercised

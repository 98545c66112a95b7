"""The bed's Auto Scaling answers the tag queries the function makes (aws/autoscaling.py) as AWS's API reference
documents them (Filter, DescribeTags, DescribeAutoScalingGroups; the user guide's "Use tags to filter Auto Scaling
groups"): a filter's values are ORed ("a tag must match at least one of the specified values"), filters are ANDed
("logically joined with an AND"), values match exactly and case-sensitively (no wildcards), and a filter nothing
matches answers an empty list, not an error.
- DescribeTags ``auto-scaling-group``: the tags of the named groups only (``asg_tags``, ownership by ASG tags);
- DescribeAutoScalingGroups ``tag-key``: groups with a tag of that key, whatever its value; ``tag:<key>``: groups
  with that key and one of the values; ``tag-value``: groups with a tag of that value, whatever its key
  (``retained_instances``, the CLI's ``status``)."""

from __future__ import annotations

from typing import Any

import pytest

from drain_orchestrator.aws.autoscaling import asg_tags
from drain_orchestrator.aws.clients import autoscaling_client
from testbed.aws_seed import AwsSeed

pytestmark = pytest.mark.integration
OWNED = "kubernetes.io/cluster/blue"


def _tags(aws: AwsSeed, *filters: tuple[str, list[str]]) -> set[tuple[str, str, str]]:
    paginator = aws.client("autoscaling").get_paginator("describe_tags")
    pages = paginator.paginate(Filters=[{"Name": n, "Values": v} for n, v in filters])
    return {(t["ResourceId"], t["Key"], t["Value"]) for page in pages for t in page["Tags"]}


def _groups(aws: AwsSeed, *filters: tuple[str, list[str]]) -> set[str]:
    paginator = aws.client("autoscaling").get_paginator("describe_auto_scaling_groups")
    query: dict[str, Any] = {"Filters": [{"Name": n, "Values": v} for n, v in filters]}
    return {g["AutoScalingGroupName"] for page in paginator.paginate(**query) for g in page["AutoScalingGroups"]}


def _three_groups(aws: AwsSeed) -> None:
    aws.asg("ng", size=0, hooks=[], tags={OWNED: "owned", "team": "data"})
    aws.asg("ng-2", size=0, hooks=[], tags={OWNED: "shared", "eks:cluster-name": "blue"})
    aws.asg("other", size=0, hooks=[], tags={"eks:cluster-name": "green", "team": "Data"})


def test_describe_tags_by_group_answers_the_named_groups_tags_only(aws: AwsSeed) -> None:
    _three_groups(aws)
    ng = {("ng", OWNED, "owned"), ("ng", "team", "data")}
    ng_2 = {("ng-2", OWNED, "shared"), ("ng-2", "eks:cluster-name", "blue")}
    assert _tags(aws, ("auto-scaling-group", ["ng"])) == ng  # "ng" is not a prefix of "ng-2"
    assert _tags(aws, ("auto-scaling-group", ["ng", "ng-2"])) == ng | ng_2  # values ORed
    assert _tags(aws, ("auto-scaling-group", ["ng", "ng-2"]), ("key", [OWNED])) == {  # filters ANDed
        ("ng", OWNED, "owned"),
        ("ng-2", OWNED, "shared"),
    }
    assert _tags(aws, ("auto-scaling-group", ["gone"])) == set()
    assert _tags(aws, ("auto-scaling-group", ["NG"])) == set()  # case-sensitive
    described = aws.client("autoscaling").describe_tags(Filters=[{"Name": "auto-scaling-group", "Values": ["ng"]}])
    assert {(t["ResourceType"], t["PropagateAtLaunch"]) for t in described["Tags"]} == {("auto-scaling-group", True)}


def test_the_function_reads_a_groups_tags_and_nothing_of_the_others(aws: AwsSeed) -> None:
    _three_groups(aws)
    autoscaling = autoscaling_client(aws.lambda_session())
    assert asg_tags(autoscaling, "ng-2") == {OWNED: "shared", "eks:cluster-name": "blue"}
    assert asg_tags(autoscaling, "gone") == {}


def test_describe_auto_scaling_groups_tag_filters_match_as_documented(aws: AwsSeed) -> None:
    _three_groups(aws)
    assert _groups(aws, ("tag-key", [OWNED])) == {"ng", "ng-2"}  # whatever the value
    assert _groups(aws, ("tag-key", [OWNED, "eks:cluster-name"])) == {"ng", "ng-2", "other"}  # values ORed
    assert _groups(aws, ("tag:eks:cluster-name", ["blue"])) == {"ng-2"}  # the key and the value
    assert _groups(aws, ("tag:eks:cluster-name", ["blue", "green"])) == {"ng-2", "other"}
    assert _groups(aws, (f"tag:{OWNED}", ["owned"])) == {"ng"}
    assert _groups(aws, ("tag-value", ["data"])) == {"ng"}  # case-sensitive: not "Data"
    assert _groups(aws, ("tag-key", [OWNED]), ("tag:eks:cluster-name", ["blue"])) == {"ng-2"}  # filters ANDed
    assert _groups(aws, ("tag-key", ["team"]), ("tag:eks:cluster-name", ["blue"])) == set()
    assert _groups(aws, ("tag:eks:cluster-name", ["purple"])) == set()
    assert _groups(aws, ("tag:eks:cluster-name", ["bl"])) == set()  # no prefix or wildcard match

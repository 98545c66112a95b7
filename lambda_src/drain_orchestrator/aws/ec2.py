"""Instance facts from one ec2:DescribeInstances call for all instances of an event."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from drain_orchestrator.aws.errors import translated
from drain_orchestrator.facts import ASG_NAME_TAG, InstanceFacts

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

_UNKNOWN_ID_CODES = ("InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed")
_ID_IN_MESSAGE = re.compile(r"i-[0-9a-zA-Z]+")
# DescribeInstances takes up to 1000 ids per call; an event lists a handful, a Health event maybe dozens.
_BATCH = 500


@translated("ec2")
def describe_instances(ec2: EC2Client, instance_ids: Sequence[str]) -> dict[str, InstanceFacts | None]:
    """Facts per instance id; None for an id EC2 does not know (a decision later, not an error)."""
    wanted = list(dict.fromkeys(instance_ids))
    result: dict[str, InstanceFacts | None] = dict.fromkeys(wanted)
    for start in range(0, len(wanted), _BATCH):
        for facts in _describe_known(ec2, wanted[start : start + _BATCH]):
            if facts.instance_id in result:
                result[facts.instance_id] = facts
    return result


def _describe_known(ec2: EC2Client, ids: list[str]) -> Iterable[InstanceFacts]:
    remaining = list(ids)
    while remaining:
        try:
            return [_facts(i) for r in _pages(ec2, remaining) for i in r.get("Instances", [])]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in _UNKNOWN_ID_CODES:
                raise
            # EC2 fails the whole call when one id is unknown; drop the ids it names and ask again.
            named = set(_ID_IN_MESSAGE.findall(str(exc.response.get("Error", {}).get("Message", ""))))
            unknown = [i for i in remaining if i in named]
            if not unknown:
                return _one_by_one(ec2, remaining)
            remaining = [i for i in remaining if i not in unknown]
    return []


def _one_by_one(ec2: EC2Client, ids: list[str]) -> list[InstanceFacts]:
    found: list[InstanceFacts] = []
    for instance_id in ids:
        try:
            found.extend(_facts(i) for r in _pages(ec2, [instance_id]) for i in r.get("Instances", []))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in _UNKNOWN_ID_CODES:
                raise
    return found


def _pages(ec2: EC2Client, ids: list[str]) -> list[Any]:
    reservations: list[Any] = []
    for page in ec2.get_paginator("describe_instances").paginate(InstanceIds=ids):
        reservations.extend(page.get("Reservations", []))
    return reservations


def _facts(instance: Any) -> InstanceFacts:
    tags = {t["Key"]: t.get("Value", "") for t in instance.get("Tags", []) if "Key" in t}
    return InstanceFacts(
        instance_id=instance["InstanceId"],
        state=instance.get("State", {}).get("Name", "unknown"),
        # Empty for instances that are not running any more; node lookup then falls back to providerID.
        private_dns_name=instance.get("PrivateDnsName") or None,
        az=instance.get("Placement", {}).get("AvailabilityZone") or None,
        instance_tags=tags,
        asg_name=tags.get(ASG_NAME_TAG) or None,
    )

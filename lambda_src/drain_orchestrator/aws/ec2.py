"""Instance facts from ec2:DescribeInstances: one call per 500 instances of an event when EC2 knows them all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from drain_orchestrator.aws.errors import translated
from drain_orchestrator.facts import ASG_NAME_TAG, InstanceFacts

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

_UNKNOWN_ID_CODES = ("InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed")
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


def _describe_known(ec2: EC2Client, ids: list[str]) -> list[InstanceFacts]:
    """Facts for the ids EC2 knows. EC2 fails a whole call when one id is unknown or malformed; split the batch
    in halves until each rejected id stands alone, so every other id still gets its answer (about
    2 x unknown x log2(batch) extra calls). Decided by the error code, never by the message text."""
    try:
        return [_facts(i) for r in _pages(ec2, ids) for i in r.get("Instances", [])]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in _UNKNOWN_ID_CODES:
            raise
    if len(ids) == 1:
        return []
    half = len(ids) // 2
    return _describe_known(ec2, ids[:half]) + _describe_known(ec2, ids[half:])


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

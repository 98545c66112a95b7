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
# DescribeInstances takes up to 1000 ids per call; an event lists a handful, a Health event maybe thousands.
_BATCH = 500
_FILTER_VALUES = 200  # EC2's limit on the values of one filter


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


@translated("ec2")
def reservation_instances(ec2: EC2Client, reservation_id: str) -> list[str]:
    """The ids of the instances EC2 says are in this capacity reservation now (a Capacity Block's), in EC2's order;
    terminated ones too while EC2 still lists them (about an hour)."""
    pages = _pages(ec2, Filters=[{"Name": "capacity-reservation-id", "Values": [reservation_id]}])
    return list(dict.fromkeys(i["InstanceId"] for r in pages for i in r.get("Instances", [])))


def _describe_known(ec2: EC2Client, ids: list[str]) -> list[InstanceFacts]:
    """Facts for the ids EC2 knows. EC2 fails a whole InstanceIds call when one id is unknown or malformed (told
    by the error code; the message is never read). The batch is then asked again through an instance-id filter,
    which answers for the ids EC2 knows and ignores the others: every valid id still gets its answer, in
    ceil(n / 200) calls however many ids are bad (splitting the batch would take about 2 x bad x log2(n))."""
    try:
        return [_facts(i) for r in _pages(ec2, InstanceIds=ids) for i in r.get("Instances", [])]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in _UNKNOWN_ID_CODES:
            raise
    found: list[InstanceFacts] = []
    for start in range(0, len(ids), _FILTER_VALUES):
        chunk = ids[start : start + _FILTER_VALUES]
        pages = _pages(ec2, Filters=[{"Name": "instance-id", "Values": chunk}])
        found.extend(_facts(i) for r in pages for i in r.get("Instances", []))
    return found


def _pages(ec2: EC2Client, **query: Any) -> list[Any]:
    reservations: list[Any] = []
    for page in ec2.get_paginator("describe_instances").paginate(**query):
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

"""The bed's EC2 holds to what AWS documents for instances in a capacity reservation (testbed/aws/ec2.py): an
instance launched with ``CapacityReservationSpecification.CapacityReservationTarget`` reports its
``CapacityReservationId``, and DescribeInstances' ``capacity-reservation-id`` filter ("the ID of the Capacity
Reservation into which the instance was launched") selects exactly those instances; an instance placed in one
afterwards (an Auto Scaling group's, as a Capacity Block's are) is found the same way."""

from __future__ import annotations

import pytest

from testbed.aws_seed import AwsSeed

pytestmark = pytest.mark.integration
RESERVATION = "cr-0123456789abcdef0"


def _filtered(aws: AwsSeed, *values: str) -> set[str]:
    pages = (
        aws.client("ec2")
        .get_paginator("describe_instances")
        .paginate(Filters=[{"Name": "capacity-reservation-id", "Values": list(values)}])
    )
    return {i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"]}


def test_the_capacity_reservation_id_filter_selects_the_instances_launched_into_it(aws: AwsSeed) -> None:
    ec2 = aws.client("ec2")
    launched = ec2.run_instances(
        ImageId=ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"],
        MinCount=2,
        MaxCount=2,
        InstanceType="m5.large",
        CapacityReservationSpecification={"CapacityReservationTarget": {"CapacityReservationId": RESERVATION}},
    )
    inside = {i["InstanceId"] for i in launched["Instances"]}
    outside = aws.instance()
    assert {aws.describe(i).get("CapacityReservationId") for i in inside} == {RESERVATION}
    assert "CapacityReservationId" not in aws.describe(outside)
    assert _filtered(aws, RESERVATION) == inside
    assert _filtered(aws, "cr-0fffffffffffffff0") == set()
    assert _filtered(aws, RESERVATION, "cr-0fffffffffffffff0") == inside  # values are ORed, as for every filter


def test_an_instance_placed_in_a_reservation_is_found_by_it_and_leaves_it(aws: AwsSeed) -> None:
    (iid,) = aws.asg("ng-blocks", size=1, tags={"kubernetes.io/cluster/blue": "owned"})
    assert _filtered(aws, RESERVATION) == set()
    aws.place_in_capacity_reservation(iid, RESERVATION)
    assert _filtered(aws, RESERVATION) == {iid}
    assert aws.describe(iid)["CapacityReservationId"] == RESERVATION
    aws.place_in_capacity_reservation(iid, None)
    assert _filtered(aws, RESERVATION) == set()

"""The bed's EC2 holds to what AWS's API reference documents for the DescribeInstances queries the function makes
(aws/ec2.py; testbed/aws/ec2.py):
- ``InstanceIds``: "If you specify an instance ID that is not valid, an error is returned" (DescribeInstances):
  the whole call fails, ``InvalidInstanceID.NotFound`` for an id EC2 never issued, ``InvalidInstanceID.Malformed``
  for one that is not an instance id at all (Error codes for the Amazon EC2 API);
- the ``instance-id`` filter selects the instances it names and ignores the others ("If you specify filters, the
  output includes information for only those instances that meet the filter criteria"): no error, no reservation
  for an id EC2 does not know, values ORed;
- "Recently terminated instances might appear in the returned results. This interval is usually less than one hour":
  a terminated instance is answered, in state ``terminated``, both ways, until EC2 forgets it; then as an id it
  never issued;
- an instance launched with ``CapacityReservationSpecification.CapacityReservationTarget`` reports its
  ``CapacityReservationId``, and the ``capacity-reservation-id`` filter ("the ID of the Capacity Reservation into
  which the instance was launched") selects exactly those instances; an instance placed in one afterwards (an Auto
  Scaling group's, as a Capacity Block's are) is found the same way."""

from __future__ import annotations

import urllib.error
from typing import Any

import pytest
from botocore.exceptions import ClientError

from drain_orchestrator.aws.clients import ec2_client
from drain_orchestrator.aws.ec2 import describe_instances
from testbed.aws_seed import AwsSeed

pytestmark = pytest.mark.integration
RESERVATION = "cr-0123456789abcdef0"
NEVER_ISSUED = "i-0000000000000dead"  # well formed: 17 hex digits
NOT_AN_ID = "i-0123456789"  # 10 hex digits: neither an old (8) nor a new (17) instance id


def _ids(pages: Any) -> dict[str, str]:
    return {i["InstanceId"]: i["State"]["Name"] for page in pages for r in page["Reservations"] for i in r["Instances"]}


def _by_ids(aws: AwsSeed, *ids: str) -> dict[str, str]:
    return _ids(aws.client("ec2").get_paginator("describe_instances").paginate(InstanceIds=list(ids)))


def _selected(aws: AwsSeed, name: str, *values: str) -> dict[str, str]:
    paginator = aws.client("ec2").get_paginator("describe_instances")
    return _ids(paginator.paginate(Filters=[{"Name": name, "Values": list(values)}]))


def _by_filter(aws: AwsSeed, *ids: str) -> dict[str, str]:
    return _selected(aws, "instance-id", *ids)


def _error_code(aws: AwsSeed, *ids: str) -> str:
    with pytest.raises(ClientError) as err:
        _by_ids(aws, *ids)
    return str(err.value.response["Error"]["Code"])


def test_instance_ids_naming_an_id_ec2_does_not_know_fail_the_whole_call(aws: AwsSeed) -> None:
    known = aws.instance()
    assert _by_ids(aws, known) == {known: "running"}
    assert _error_code(aws, known, NEVER_ISSUED) == "InvalidInstanceID.NotFound"
    assert _error_code(aws, NEVER_ISSUED) == "InvalidInstanceID.NotFound"
    assert _error_code(aws, known, NOT_AN_ID) == "InvalidInstanceID.Malformed"
    assert _error_code(aws, "i-NOTANID") == "InvalidInstanceID.Malformed"


def test_the_instance_id_filter_answers_the_ids_ec2_knows_and_ignores_the_others(aws: AwsSeed) -> None:
    first, second = aws.instance(), aws.instance()
    assert _by_filter(aws, first) == {first: "running"}
    assert _by_filter(aws, first, second) == {first: "running", second: "running"}  # values are ORed
    assert _by_filter(aws, first, NEVER_ISSUED, NOT_AN_ID) == {first: "running"}
    assert _by_filter(aws, NEVER_ISSUED) == {}  # no reservations, no error


def test_a_terminated_instance_is_answered_for_a_while_then_as_an_id_ec2_does_not_know(aws: AwsSeed) -> None:
    gone, staying = aws.instance(), aws.instance()
    aws.terminate_instance(gone)
    assert _by_ids(aws, gone, staying) == {gone: "terminated", staying: "running"}
    assert _by_filter(aws, gone) == {gone: "terminated"}
    aws.forget_terminated(gone)  # the while is over
    assert _error_code(aws, gone, staying) == "InvalidInstanceID.NotFound"
    assert _by_filter(aws, gone, staying) == {staying: "running"}
    facts = describe_instances(ec2_client(aws.lambda_session()), [gone, staying])
    assert facts[gone] is None and facts[staying] is not None


def test_only_a_terminated_instance_can_be_forgotten(aws: AwsSeed) -> None:
    running = aws.instance()
    with pytest.raises(urllib.error.HTTPError) as refused:
        aws.forget_terminated(running)
    assert refused.value.code == 400 and b"is running" in refused.value.read()
    assert _by_ids(aws, running) == {running: "running"}


def test_the_function_gets_an_answer_for_every_id_whichever_way_ec2_refuses_the_batch(aws: AwsSeed) -> None:
    """What the function does with these answers (aws/ec2.py): the refused batch is asked again by filter, every id
    EC2 knows gets its facts, the others None."""
    known, gone = aws.instance(tags={"eks:cluster-name": "blue"}), aws.instance()
    aws.terminate_instance(gone)
    client = ec2_client(aws.lambda_session())
    for bad in (NEVER_ISSUED, NOT_AN_ID):
        facts = describe_instances(client, [known, bad, gone])
        assert {i: (f.state if f else None) for i, f in facts.items()} == {
            known: "running",
            bad: None,
            gone: "terminated",
        }


def _filtered(aws: AwsSeed, *values: str) -> set[str]:
    return set(_selected(aws, "capacity-reservation-id", *values))


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

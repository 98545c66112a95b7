"""EC2 extension of the test bed's AWS emulator (server.py): instances in a capacity reservation.

moto 5.2.5 ignores RunInstances' ``CapacityReservationSpecification`` and refuses DescribeInstances' documented
``capacity-reservation-id`` filter (NotImplementedError: a 500). Here an instance launched into a reservation
(``CapacityReservationTarget.CapacityReservationId``), or placed in one afterwards with
``POST /_testbed/ec2/capacity-reservation`` ``{"instance_id", "capacity_reservation_id"}`` (what launching into a
reservation, a Capacity Block's among them, leaves on AWS), carries ``CapacityReservationId`` in DescribeInstances,
and the filter selects instances by it (an instance in no reservation matches no value).
"""

from __future__ import annotations

from typing import Any

FILTER = "capacity-reservation-id"
ATTRIBUTE = "capacity_reservation_id"  # moto's serializer answers it as the Instance's CapacityReservationId


def install() -> None:
    from moto.ec2 import utils
    from moto.ec2.models.instances import Instance
    from moto.ec2.responses.instances import InstanceResponse

    Instance.capacity_reservation_id = None  # type: ignore[attr-defined]  # in no reservation until placed in one
    utils.filter_dict_attribute_mapping[FILTER] = ATTRIBUTE
    run = InstanceResponse.run_instances

    def run_into_reservation(self: Any) -> Any:
        result = run(self)
        target = self._get_param("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId")
        if target:
            for instance in result.result.instances:
                setattr(instance, ATTRIBUTE, str(target))
        return result

    InstanceResponse.run_instances = run_into_reservation  # type: ignore[method-assign]


def place(instance_id: str, reservation_id: str | None) -> dict[str, Any]:
    """Put an instance in a capacity reservation (None: in none), in whichever account and region holds it."""
    from moto.ec2.models import ec2_backends

    for account in ec2_backends.values():
        for backend in account.values():
            for reservation in backend.reservations.values():
                for instance in reservation.instances:
                    if instance.id == instance_id:
                        setattr(instance, ATTRIBUTE, reservation_id)
                        return {"instance_id": instance_id, "capacity_reservation_id": reservation_id}
    raise LookupError(f"no instance {instance_id}")

"""EC2 extensions of the test bed's AWS emulator (server.py): instances in a capacity reservation, and a state read
that lags.

moto 5.2.5 ignores RunInstances' ``CapacityReservationSpecification`` and refuses DescribeInstances' documented
``capacity-reservation-id`` filter (NotImplementedError: a 500). Here an instance launched into a reservation
(``CapacityReservationTarget.CapacityReservationId``), or placed in one afterwards with
``POST /_testbed/ec2/capacity-reservation`` ``{"instance_id", "capacity_reservation_id"}`` (what launching into a
reservation, a Capacity Block's among them, leaves on AWS), carries ``CapacityReservationId`` in DescribeInstances,
and the filter selects instances by it (an instance in no reservation matches no value).

DescribeInstances is eventually consistent on AWS: a read may answer a state older than one an earlier read gave.
``POST /_testbed/ec2/instance-state`` ``{"instance_id", "state", "after_reads"}`` makes EC2 report the instance in
``state`` once ``after_reads`` more DescribeInstances naming it were answered as they stand (0: from the next one on),
so a test can give the function's first look one state and its later looks another.
"""

from __future__ import annotations

import threading
from typing import Any

FILTER = "capacity-reservation-id"
ATTRIBUTE = "capacity_reservation_id"  # moto's serializer answers it as the Instance's CapacityReservationId
STATE_CODES = {"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}
_LOCK = threading.Lock()
_REPORTS: dict[str, tuple[int, str]] = {}  # instance id -> (reads still answered as they stand, the state after)


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
    describe = InstanceResponse.describe_instances

    def describe_as_reported(self: Any) -> Any:
        for iid in self._get_param("InstanceIds", []):
            _read(iid)
        return describe(self)

    InstanceResponse.describe_instances = describe_as_reported  # type: ignore[method-assign]


def report_state(instance_id: str, state: str, after_reads: int) -> dict[str, Any]:
    """From ``after_reads`` DescribeInstances naming the instance on, EC2 reports it in ``state``."""
    if state not in STATE_CODES:
        raise ValueError(f"state {state!r}: expected one of {', '.join(STATE_CODES)}")
    _instance(instance_id)  # LookupError: no such instance
    with _LOCK:
        _REPORTS[instance_id] = (int(after_reads), state)
    if after_reads <= 0:
        _read(instance_id)
    return {"instance_id": instance_id, "state": state, "after_reads": after_reads}


def _read(instance_id: str) -> None:
    """One DescribeInstances naming the instance is about to be answered: its state changes when its turn came."""
    with _LOCK:
        if instance_id not in _REPORTS:
            return
        left, state = _REPORTS[instance_id]
        if left > 0:
            _REPORTS[instance_id] = (left - 1, state)
            return
        del _REPORTS[instance_id]
    instance = _instance(instance_id)
    instance._state.name, instance._state.code = state, STATE_CODES[state]


def clear() -> None:
    with _LOCK:
        _REPORTS.clear()


def _instance(instance_id: str) -> Any:
    from moto.ec2.models import ec2_backends

    for account in ec2_backends.values():
        for backend in account.values():
            for reservation in backend.reservations.values():
                for instance in reservation.instances:
                    if instance.id == instance_id:
                        return instance
    raise LookupError(f"no instance {instance_id}")


def place(instance_id: str, reservation_id: str | None) -> dict[str, Any]:
    """Put an instance in a capacity reservation (None: in none), in whichever account and region holds it."""
    setattr(_instance(instance_id), ATTRIBUTE, reservation_id)
    return {"instance_id": instance_id, "capacity_reservation_id": reservation_id}

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

DescribeInstances lists a terminated instance only "for a while" after it terminated (usually less than an hour, the
API reference says; moto lists it for good): ``POST /_testbed/ec2/forget-terminated`` ``{"instance_id"}`` ends that
while for one terminated instance, and EC2 answers for it as for an id it never issued.

DescribeInstances with ``InstanceIds`` answers ``InvalidInstanceID.Malformed`` for an id that is not ``i-`` and 8 or
17 hex digits, as AWS does (moto answers ``InvalidInstanceID.NotFound`` for any id it does not hold, well-formed or
not): code that tells the two apart, or handles only one, is tested against the code AWS really sends.
"""

from __future__ import annotations

import re
import threading
from typing import Any

FILTER = "capacity-reservation-id"
ATTRIBUTE = "capacity_reservation_id"  # moto's serializer answers it as the Instance's CapacityReservationId
STATE_CODES = {"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}
# AWS's instance ids: "i-" and 8 hex digits (before 2016) or 17
WELL_FORMED_ID = re.compile(r"i-(?:[0-9a-f]{8}|[0-9a-f]{17})")
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
        from moto.ec2.exceptions import EC2ClientError

        ids = self._get_param("InstanceIds", [])
        for iid in ids:
            if not WELL_FORMED_ID.fullmatch(iid):
                raise EC2ClientError("InvalidInstanceID.Malformed", f'Invalid id: "{iid}"')
        for iid in ids:
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
    return _located(instance_id)[2]


def _located(instance_id: str) -> tuple[Any, Any, Any]:
    """(backend, reservation, instance) of the instance, in whichever account and region holds it."""
    from moto.ec2.models import ec2_backends

    for account in ec2_backends.values():
        for backend in account.values():
            for reservation in backend.reservations.values():
                for instance in reservation.instances:
                    if instance.id == instance_id:
                        return backend, reservation, instance
    raise LookupError(f"no instance {instance_id}")


def forget_terminated(instance_id: str) -> dict[str, Any]:
    """EC2 stops listing a terminated instance (its "recently terminated" while is over)."""
    backend, reservation, instance = _located(instance_id)
    if instance._state.name != "terminated":
        raise ValueError(f"instance {instance_id} is {instance._state.name}: EC2 forgets terminated instances only")
    reservation.instances = [i for i in reservation.instances if i.id != instance_id]
    if not reservation.instances:
        del backend.reservations[reservation.id]
    with _LOCK:
        _REPORTS.pop(instance_id, None)
    return {"instance_id": instance_id, "forgotten": True}


def place(instance_id: str, reservation_id: str | None) -> dict[str, Any]:
    """Put an instance in a capacity reservation (None: in none), in whichever account and region holds it."""
    setattr(_instance(instance_id), ATTRIBUTE, reservation_id)
    return {"instance_id": instance_id, "capacity_reservation_id": reservation_id}

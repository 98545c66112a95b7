"""The shape of EC2's Capacity Block events (`Capacity Block Delivered`, `Capacity Block Expiration Warning`):
pydantic models the parser (events.py) validates them with. Pure.

Both carry ``detail: {capacity-reservation-id, end-date}`` and no instance id: the reservation is mapped to its
instances when the flow acts (decide.reservation_instances), since a block just delivered has none yet.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

# EC2 capacity reservation ids: "cr-" and 17 hex digits (8 for the oldest)
CapacityReservationId = Annotated[str, StringConstraints(pattern=r"^cr-[0-9a-f]{8,32}$")]


class CapacityBlockDetail(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)
    capacity_reservation_id: CapacityReservationId = Field(alias="capacity-reservation-id")
    end_date: datetime = Field(alias="end-date")  # ISO 8601; a zone-less time is UTC (events._epoch)


class CapacityBlockEvent(EventBridgeModel):
    model_config = ConfigDict(defer_build=True)
    version: str = "0"  # AWS's documented examples omit it
    source: Literal["aws.ec2"]
    detail: CapacityBlockDetail

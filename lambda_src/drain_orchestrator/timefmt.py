"""Times for people: ISO 8601 UTC strings and "seconds left" beside the epoch floats the code computes with.

Pure (the clock is a parameter), so notifications, summaries and the CLI print deadlines the same way.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from typing import TypedDict


class DeadlineFields(TypedDict):
    deadline: str | None  # ISO 8601 UTC, for people
    deadline_epoch: float | None  # the same moment for machines
    seconds_left: int | None  # negative once the deadline has passed


def iso_utc(epoch: float) -> str:
    """`2025-03-28T00:12:37Z`; milliseconds only when the moment has some (`…37.214Z`)."""
    moment = datetime.fromtimestamp(epoch, tz=UTC)
    if moment.microsecond:
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def deadline_fields(deadline: float | None, now: float | None = None) -> DeadlineFields:
    """A deadline as people and machines read it; every field is None when there is no deadline."""
    if deadline is None:
        return {"deadline": None, "deadline_epoch": None, "seconds_left": None}
    current = time.time() if now is None else now
    return {
        "deadline": iso_utc(deadline),
        "deadline_epoch": deadline,
        # floor: "0 s left" only when less than a second remains, never rounded up past the deadline
        "seconds_left": math.floor(deadline - current),
    }

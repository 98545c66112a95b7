"""Replay a sample event "now": move every time it carries by the same offset, so the event's time becomes the
present and its deadline or maintenance window keeps its distance from it (`--now` of explain and invoke).

Pure, on the raw EventBridge JSON, before parsing: the parser then derives deadlines as it would for a live event.
"""

from __future__ import annotations

import copy
import email.utils
from datetime import UTC, datetime, timedelta
from typing import Any

# AWS Health times (RFC 1123, e.g. "Fri, 28 Mar 2025 22:00:00 GMT") inside `detail`.
HEALTH_TIME_FIELDS = ("startTime", "endTime", "lastUpdatedTime")
# ISO 8601 times inside `detail` (a capacity reservation's interruption warning, a Capacity Block's end).
ISO_TIME_FIELDS = ("instance-termination-time", "end-date")


class RestampError(ValueError):
    """The event has no usable `time` to move from."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _parse_iso(value: str) -> datetime:
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _format_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def restamp(raw: Any, now: datetime) -> Any:
    """A copy of `raw` whose `time` is `now` and whose other times moved by the same offset."""
    if not isinstance(raw, dict):
        raise RestampError("event", "expected a JSON object")
    original = raw.get("time")
    if not isinstance(original, str):
        raise RestampError("time", "expected an ISO 8601 string to move from")
    try:
        offset = now - _parse_iso(original)
    except ValueError as exc:
        raise RestampError("time", f"expected ISO 8601, got {original!r}") from exc
    event = copy.deepcopy(raw)
    event["time"] = _format_iso(now)
    detail = event.get("detail")
    if isinstance(detail, dict):
        for name in HEALTH_TIME_FIELDS:
            value = detail.get(name)
            if isinstance(value, str):
                detail[name] = _shift_health_time(value, offset, f"detail.{name}")
        for name in ISO_TIME_FIELDS:
            value = detail.get(name)
            if isinstance(value, str):
                detail[name] = _shift_iso_time(value, offset, f"detail.{name}")
    return event


def _shift_iso_time(value: str, offset: timedelta, field: str) -> str:
    try:
        return _format_iso(_parse_iso(value) + offset)
    except ValueError as exc:
        raise RestampError(field, f"expected ISO 8601, got {value!r}") from exc


def _shift_health_time(value: str, offset: timedelta, field: str) -> str:
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        try:
            return _format_iso(_parse_iso(value) + offset)  # Health accepts ISO 8601 as well
        except ValueError as exc:
            raise RestampError(field, f"expected an RFC 1123 or ISO 8601 time, got {value!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return email.utils.format_datetime((moment + offset).astimezone(UTC), usegmt=True)

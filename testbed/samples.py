"""Load the event samples in events/ and substitute ids, so tests and docs share one set of shapes."""

from __future__ import annotations

import copy
import email.utils
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EVENTS_DIR = Path(__file__).resolve().parent.parent / "events"
SAMPLE_INSTANCE = "i-0123456789abcdef0"
HEALTH_WINDOW_SECONDS = 8 * 3600  # the sample's window: 22:00 to 06:00


def names(prefix: str = "") -> list[str]:
    return sorted(p.name for p in EVENTS_DIR.glob(f"{prefix}*.json"))


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text())
    return data


def lifecycle_event(
    name: str, *, instance_id: str, asg: str, hook: str, token: str | None, region: str = "us-east-1"
) -> dict[str, Any]:
    event = copy.deepcopy(load(name))
    event["region"] = region
    detail = event["detail"]
    detail.update(EC2InstanceId=instance_id, AutoScalingGroupName=asg, LifecycleHookName=hook)
    if token is None:
        detail.pop("LifecycleActionToken", None)
    else:
        detail["LifecycleActionToken"] = token
    return event


def ec2_event(name: str, *, instance_id: str) -> dict[str, Any]:
    event = copy.deepcopy(load(name))
    event["detail"]["instance-id"] = instance_id
    event["resources"] = [f"arn:aws:ec2:{event['region']}:{event['account']}:instance/{instance_id}"]
    return event


def capacity_block_event(name: str, reservation_id: str, *, sent: float, end: float) -> dict[str, Any]:
    """A Capacity Block sample (``capacity-block-delivered.json``, ``capacity-block-expiration-warning.json``) for
    this reservation, sent at ``sent`` for a block ending at ``end`` (epoch seconds)."""
    event = copy.deepcopy(load(name))
    event["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sent))
    event["resources"] = [f"arn:aws:ec2:{event['region']}:{event['account']}:capacity-reservation/{reservation_id}"]
    event["detail"].update({"capacity-reservation-id": reservation_id, "end-date": _iso(end)})
    return event


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def health_event(
    instance_ids: list[str],
    *,
    start: float | None = None,
    end: float | None = None,
    sample: str = "health-scheduled-change.json",
) -> dict[str, Any]:
    """The scheduled-change sample for these instances (``sample``: another update of it, such as
    health-scheduled-change-closed.json, or another change, such as health-reboot-maintenance.json); ``start``
    (epoch) moves its window there, its end to ``end``, by default the sample's 8 hours later (a window that ended
    is a stale event for a running instance). The header's date format has whole seconds."""
    event = copy.deepcopy(load(sample))
    event["resources"] = list(instance_ids)
    event["detail"]["affectedEntities"] = [{"entityValue": i, "tags": {}} for i in instance_ids]
    if start is not None:
        event["detail"]["startTime"] = email.utils.formatdate(start, usegmt=True)
        ends = start + HEALTH_WINDOW_SECONDS if end is None else end
        event["detail"]["endTime"] = email.utils.formatdate(ends, usegmt=True)
    return event

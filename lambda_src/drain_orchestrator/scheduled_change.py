"""The newest update of each AWS Health scheduled change, as recorded on its node. Pure; kube/change_marks.py stores
the records in the annotation ``drain-orchestrator.io/scheduled-changes``.

A scheduled change is published ``upcoming``, may be updated (a new window, ``open`` once it starts) and ends
``closed`` (done or cancelled). Each update is its own event with the same eventArn, delivered to its own execution,
in any order. Every execution of an update records it on the node before it acts, and the newest by the update's
own ``lastUpdatedTime`` wins: an execution whose update is no longer the newest does not cordon (a closed or
rescheduled change), and one waiting for its window finds out when it wakes. The Health API could say the same
(DescribeEventDetails), but only on a Business or Enterprise support plan; the node is readable by every
execution on every plan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from drain_orchestrator.interruption import Interruption

ANN_CHANGES = "drain-orchestrator.io/scheduled-changes"
# a node is the subject of a few changes at once at most; the oldest records go first
MAX_RECORDS = 16

Standing = Literal["current", "superseded", "closed"]


@dataclass(frozen=True)
class ChangeRecord:
    arn: str
    updated: float  # the update's lastUpdatedTime (epoch)
    status: str  # upcoming | open | closed
    start: float | None = None
    end: float | None = None

    @classmethod
    def of(cls, event: Interruption) -> ChangeRecord:
        assert event.change_arn is not None and event.change_updated is not None
        status = event.change_status or "upcoming"
        return cls(event.change_arn, event.change_updated, status, event.window_start, event.window_end)

    def newer_than(self, other: ChangeRecord) -> bool:
        """By the update's own time; at the same time a closed update wins (it cannot be undone)."""
        return (self.updated, self.status == "closed") > (other.updated, other.status == "closed")


def read_records(raw: str | None) -> dict[str, ChangeRecord]:
    """The stored records by eventArn; unreadable entries are dropped (a hand-edited annotation decides nothing)."""
    if not raw:
        return {}
    try:
        data: Any = json.loads(raw)
    except ValueError:
        return {}
    out: dict[str, ChangeRecord] = {}
    for item in data if isinstance(data, list) else []:
        try:
            start, end = item.get("start"), item.get("end")
            record = ChangeRecord(
                str(item["arn"]),
                float(item["updated"]),
                str(item["status"]),
                None if start is None else float(start),
                None if end is None else float(end),
            )
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
        out[record.arn] = record
    return out


def write_records(records: Mapping[str, ChangeRecord]) -> str:
    newest = sorted(records.values(), key=lambda r: r.updated, reverse=True)[:MAX_RECORDS]
    return json.dumps([asdict(r) for r in newest], separators=(",", ":"), sort_keys=True)


def recorded(annotations: Mapping[str, str], update: ChangeRecord) -> tuple[str | None, ChangeRecord]:
    """The annotation's new value with ``update`` recorded (None: no change: a newer or the same update is there),
    and the newest record of the change once written."""
    records = read_records(annotations.get(ANN_CHANGES))
    stored = records.get(update.arn)
    if stored is not None and not update.newer_than(stored):
        return None, stored
    return write_records({**records, update.arn: update}), update


def standing(newest: ChangeRecord, mine: ChangeRecord) -> Standing:
    """What the newest recorded update means for the execution of ``mine``."""
    if newest.status == "closed":
        return "closed"
    if newest.newer_than(mine):
        return "superseded"
    return "current"


def newest_of(annotations: Mapping[str, str], arn: str) -> ChangeRecord | None:
    return read_records(annotations.get(ANN_CHANGES)).get(arn)

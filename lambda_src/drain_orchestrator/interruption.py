"""What an event means once parsed: `Interruption` (something to act on) or `Ignored` (with a reason).

Plain dataclasses, no pydantic: the workflow rebuilds them from checkpoints on every replay, and a replay must not
pay for the parser (events.py), which only the first invocation of an execution needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, cast, get_args

Kind = Literal[
    "asg-terminate",
    "asg-launch",
    "spot-interruption",
    "capacity-reservation-interruption",
    "rebalance",
    "state-change",
    "scheduled-change",
    "capacity-block-delivered",
    "capacity-block-expiring",
]
IgnoreReason = Literal["unsupported", "state-not-draining", "test-notification", "no-instances"]


class MalformedEvent(ValueError):
    """The event claims a supported kind but does not have the shape AWS documents."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class LifecycleRef:
    asg_name: str
    hook_name: str
    token: str | None
    transition: str
    origin: str | None = None
    destination: str | None = None

    @property
    def to_warm_pool(self) -> bool:
        return self.destination == "WarmPool"


@dataclass(frozen=True)
class Interruption:
    """Something is about to happen to these instances. JSON round-trippable (the workflow checkpoints it)."""

    kind: Kind
    event_id: str
    event_time: float  # epoch seconds
    region: str
    account: str
    instance_ids: tuple[str, ...]
    # epoch seconds by which the instance is gone, None when the event does not say (deadlines.drain_deadline then
    # decides by kind)
    deadline: float | None
    detail_type: str
    lifecycle: LifecycleRef | None = None
    state: str | None = None  # state-change
    # spot-interruption: terminate | stop | hibernate; capacity-reservation-interruption: terminate (as sent)
    instance_action: str | None = None
    window_start: float | None = None  # scheduled-change
    window_end: float | None = None
    event_type_code: str | None = None  # scheduled-change
    # capacity-block-*: the reservation the event names (its instances are looked up: the event names none) and its
    # end-date as the event says (EC2 starts terminating the instances 30 minutes before)
    capacity_reservation_id: str | None = None
    block_end: float | None = None
    # scheduled-change: the Health event's own identity and state (an update of one change repeats its eventArn):
    # upcoming | open | closed, and its lastUpdatedTime (epoch; the event's time when absent): the newest update wins
    change_arn: str | None = None
    change_status: str | None = None
    change_updated: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["instance_ids"] = list(self.instance_ids)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Interruption:
        fields = dict(data)
        kind = fields.pop("kind")
        if kind not in get_args(Kind):
            raise ValueError(f"unknown interruption kind {kind!r}")
        lifecycle = fields.pop("lifecycle", None)
        return cls(
            kind=cast(Kind, kind),
            instance_ids=tuple(fields.pop("instance_ids")),
            lifecycle=None if lifecycle is None else LifecycleRef(**lifecycle),
            **fields,
        )


@dataclass(frozen=True)
class Ignored:
    """An event the product deliberately does nothing with; never an error, never a retry."""

    reason: IgnoreReason
    message: str
    detail_type: str | None = None
    event_id: str | None = None
    instance_ids: tuple[str, ...] = ()

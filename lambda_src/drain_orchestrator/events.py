"""EventBridge event → typed `Interruption` (something to act on) or `Ignored` (with a reason).

Pure. Parsing is all-or-nothing: a malformed event raises `MalformedEvent` naming the field path and nothing
downstream ever sees a half-parsed event. Shapes follow the AWS docs samples in events/*.json. Before any model
(or anything recursive) sees it, an event is checked against EventBridge's size limit and a nesting depth no real
event comes near; strings quoted back from the event are clipped (clip.py).
"""

from __future__ import annotations

import email.utils
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from drain_orchestrator.capacity_block_event import CapacityBlockEvent
from drain_orchestrator.clip import clip
from drain_orchestrator.interruption import (  # re-exported: callers keep importing them from here
    Ignored,
    IgnoreReason,
    Interruption,
    Kind,
    LifecycleRef,
    MalformedEvent,
)
from drain_orchestrator.kinds import KINDS

__all__ = ["IgnoreReason", "Ignored", "Interruption", "Kind", "LifecycleRef", "MalformedEvent", "parse_event"]

# each kind's detail-type, as its EventBridge rule matches it (kinds.KINDS)
TERMINATE_DETAIL_TYPE = KINDS["asg-terminate"].detail_type
LAUNCH_DETAIL_TYPE = KINDS["asg-launch"].detail_type
SPOT_DETAIL_TYPE = KINDS["spot-interruption"].detail_type
CAPACITY_RESERVATION_DETAIL_TYPE = KINDS["capacity-reservation-interruption"].detail_type
REBALANCE_DETAIL_TYPE = KINDS["rebalance"].detail_type
STATE_CHANGE_DETAIL_TYPE = KINDS["state-change"].detail_type
HEALTH_DETAIL_TYPE = KINDS["scheduled-change"].detail_type
CAPACITY_BLOCK_KINDS: dict[str, Kind] = {  # the model: capacity_block_event.py
    KINDS[kind].detail_type: kind for kind in ("capacity-block-delivered", "capacity-block-expiring")
}
TEST_NOTIFICATION = "autoscaling:TEST_NOTIFICATION"

# Spot warnings come two minutes before the interruption (hibernation starts at once).
SPOT_WARNING_SECONDS = 120
# A lifecycle hook can hold an instance at most 48 h (global timeout); the hook's own value refines it.
LIFECYCLE_GLOBAL_TIMEOUT_MAX_SECONDS = 48 * 3600
# Stopping/shutting-down instances are already going: drain with a short, best-effort deadline.
STATE_CHANGE_DEADLINE_SECONDS = 60
DRAINING_STATES = ("stopping", "stopped", "shutting-down", "terminated")

# EventBridge refuses events over 256 KB; anything bigger did not come through EventBridge.
MAX_EVENT_BYTES = 256 * 1024
# Real events nest at most five levels (detail.affectedEntities[i].tags); 32 leaves room and stops a hostile
# event long before Python's recursion limit.
MAX_EVENT_DEPTH = 32

# pydantic's (Rust) regex anchors `$` at the very end; Python code uses fullmatch (`$` would allow a trailing "\n").
INSTANCE_ID_PATTERN = r"^i-[0-9a-f]{8,32}$"
_INSTANCE_ID = re.compile(r"i-[0-9a-f]{8,32}")
InstanceId = Annotated[str, StringConstraints(pattern=INSTANCE_ID_PATTERN)]
# CompleteLifecycleAction accepts exactly 36 characters (a UUID).
LifecycleToken = Annotated[str, StringConstraints(min_length=36, max_length=36)]
AsgName = Annotated[str, StringConstraints(min_length=1, max_length=1600)]
HookName = Annotated[str, StringConstraints(min_length=1, max_length=255)]


# ---- pydantic models (Powertools parser), one per detail-type -------------------------------------------


class _Detail(BaseModel):
    # defer_build: a model's validator is built on its first use, so a cold start pays only for the kind it parses
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class _Event(EventBridgeModel):
    model_config = ConfigDict(defer_build=True)
    # The state-change doc sample omits "version"; real events carry "0". Do not reject the doc shape.
    version: str = "0"


class LifecycleActionDetail(_Detail):
    LifecycleActionToken: LifecycleToken | None = None
    AutoScalingGroupName: AsgName
    LifecycleHookName: HookName
    EC2InstanceId: InstanceId
    LifecycleTransition: str
    NotificationMetadata: str | None = None
    Origin: Literal["EC2", "AutoScalingGroup", "WarmPool"] | None = None
    Destination: Literal["EC2", "AutoScalingGroup", "WarmPool"] | None = None


class TerminateDetail(LifecycleActionDetail):
    LifecycleTransition: Literal["autoscaling:EC2_INSTANCE_TERMINATING"]


class LaunchDetail(LifecycleActionDetail):
    LifecycleTransition: Literal["autoscaling:EC2_INSTANCE_LAUNCHING"]


class TerminateLifecycleEvent(_Event):
    source: Literal["aws.autoscaling"]
    detail: TerminateDetail


class LaunchLifecycleEvent(_Event):
    source: Literal["aws.autoscaling"]
    detail: LaunchDetail


class SpotDetail(_Detail):
    instance_id: InstanceId = Field(alias="instance-id")
    instance_action: Literal["terminate", "stop", "hibernate"] = Field(alias="instance-action")


class SpotInterruptionEvent(_Event):
    source: Literal["aws.ec2"]
    detail: SpotDetail


class CapacityReservationDetail(_Detail):
    instance_id: InstanceId = Field(alias="instance-id")
    # AWS documents only "terminate"; another action still takes the instance away, so it is kept (clipped),
    # not refused.
    instance_action: str | None = Field(None, alias="instance-action")
    # When EC2 terminates the instance (2 minutes after the warning); absent, deadlines.py assumes that notice.
    instance_termination_time: datetime | None = Field(None, alias="instance-termination-time")


class CapacityReservationInterruptionEvent(_Event):
    source: Literal["aws.ec2"]
    detail: CapacityReservationDetail


class InstanceDetail(_Detail):
    instance_id: InstanceId = Field(alias="instance-id")


class RebalanceEvent(_Event):
    source: Literal["aws.ec2"]
    detail: InstanceDetail


class StateChangeDetail(InstanceDetail):
    state: Literal["pending", "running", "stopping", "stopped", "shutting-down", "terminated"]


class StateChangeEvent(_Event):
    source: Literal["aws.ec2"]
    detail: StateChangeDetail


class HealthEntity(_Detail):
    entityValue: str


def _health_time(value: object) -> object:
    # Health uses RFC 1123 ("Thu, 1 Nov 2018 22:00:00 GMT"); accept ISO 8601 as well.
    if isinstance(value, str) and not value[:4].isdigit():
        try:
            return email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError) as exc:
            raise ValueError(f"not an RFC 1123 date: {clip(value)!r}") from exc
    return value


class HealthDetail(_Detail):
    eventArn: str
    service: Literal["EC2"]
    eventTypeCode: str
    eventTypeCategory: Literal["scheduledChange"]
    eventRegion: str | None = None
    startTime: datetime | None = None
    endTime: datetime | None = None
    # a scheduled change is published upcoming, may be updated (a new window; open once it starts) and ends closed
    # (done or cancelled); absent: taken as upcoming
    statusCode: Literal["upcoming", "open", "closed"] | None = None
    lastUpdatedTime: datetime | None = None
    affectedEntities: list[HealthEntity] = Field(default_factory=list)

    _parse_times = field_validator("startTime", "endTime", "lastUpdatedTime", mode="before")(_health_time)


class HealthScheduledChangeEvent(_Event):
    source: Literal["aws.health"]
    detail: HealthDetail


# ---- parsing ----------------------------------------------------------------------------------------------


def parse_event(raw: object) -> Interruption | Ignored:
    """Parse one EventBridge event. Raises MalformedEvent; never returns something half-parsed."""
    if not isinstance(raw, Mapping):
        raise MalformedEvent("<event>", f"expected a JSON object, got {type(raw).__name__}")
    _check_limits(raw)
    if raw.get("Event") == TEST_NOTIFICATION:
        return Ignored("test-notification", "Auto Scaling test notification", event_id=_event_id(raw))
    detail_type = raw.get("detail-type")
    if detail_type is None:
        raise MalformedEvent("detail-type", "field required")
    if not isinstance(detail_type, str):
        raise MalformedEvent("detail-type", "input should be a valid string")
    event_id = _event_id(raw)
    detail = raw.get("detail")
    try:
        if detail_type in (TERMINATE_DETAIL_TYPE, LAUNCH_DETAIL_TYPE):
            if isinstance(detail, Mapping) and detail.get("LifecycleTransition") == TEST_NOTIFICATION:
                return Ignored("test-notification", "Auto Scaling test notification", clip(detail_type), event_id)
            return _lifecycle(raw, terminate=detail_type == TERMINATE_DETAIL_TYPE)
        if detail_type == SPOT_DETAIL_TYPE:
            return _spot(SpotInterruptionEvent.model_validate(raw))
        if detail_type == CAPACITY_RESERVATION_DETAIL_TYPE:
            return _capacity_reservation(CapacityReservationInterruptionEvent.model_validate(raw))
        if detail_type == REBALANCE_DETAIL_TYPE:
            event = RebalanceEvent.model_validate(raw)
            return _interruption(event, "rebalance", (event.detail.instance_id,), deadline=None)
        if detail_type == STATE_CHANGE_DETAIL_TYPE:
            return _state_change(StateChangeEvent.model_validate(raw))
        if detail_type in CAPACITY_BLOCK_KINDS:
            return _capacity_block(CapacityBlockEvent.model_validate(raw), CAPACITY_BLOCK_KINDS[detail_type])
        if detail_type == HEALTH_DETAIL_TYPE:
            if isinstance(detail, Mapping) and (
                detail.get("service") != "EC2" or detail.get("eventTypeCategory") != "scheduledChange"
            ):
                return Ignored(
                    "unsupported",
                    "AWS Health event that is not an EC2 scheduled change",
                    clip(detail_type),
                    event_id,
                )
            return _health(HealthScheduledChangeEvent.model_validate(raw))
    except ValidationError as exc:
        raise _malformed(exc) from None
    shown = clip(detail_type)
    return Ignored("unsupported", f"detail-type {shown!r} is not handled", shown, event_id)


def _lifecycle(raw: Mapping[str, Any], *, terminate: bool) -> Interruption:
    model = TerminateLifecycleEvent if terminate else LaunchLifecycleEvent
    event = model.model_validate(raw)
    d = event.detail
    ref = LifecycleRef(
        asg_name=d.AutoScalingGroupName,
        hook_name=d.LifecycleHookName,
        token=d.LifecycleActionToken,
        transition=d.LifecycleTransition,
        origin=d.Origin,
        destination=d.Destination,
    )
    # Upper bound; the workflow narrows it with the hook's GlobalTimeout (DescribeLifecycleHooks).
    deadline = _epoch(event.time) + LIFECYCLE_GLOBAL_TIMEOUT_MAX_SECONDS
    kind: Kind = "asg-terminate" if terminate else "asg-launch"
    return _interruption(event, kind, (d.EC2InstanceId,), deadline=deadline, lifecycle=ref)


def _spot(event: SpotInterruptionEvent) -> Interruption:
    warning = 0 if event.detail.instance_action == "hibernate" else SPOT_WARNING_SECONDS
    return _interruption(
        event,
        "spot-interruption",
        (event.detail.instance_id,),
        deadline=_epoch(event.time) + warning,
        instance_action=event.detail.instance_action,
    )


def _capacity_reservation(event: CapacityReservationInterruptionEvent) -> Interruption:
    d = event.detail
    return _interruption(
        event,
        "capacity-reservation-interruption",
        (d.instance_id,),
        deadline=None if d.instance_termination_time is None else _epoch(d.instance_termination_time),
        instance_action=None if d.instance_action is None else clip(d.instance_action),
    )


def _capacity_block(event: CapacityBlockEvent, kind: Kind) -> Interruption:
    """No instance ids: the flow maps the reservation to its instances when it acts."""
    d = event.detail
    return _interruption(
        event, kind, (), deadline=None, capacity_reservation_id=d.capacity_reservation_id, block_end=_epoch(d.end_date)
    )


def _state_change(event: StateChangeEvent) -> Interruption | Ignored:
    state = event.detail.state
    if state not in DRAINING_STATES:
        return Ignored(
            "state-not-draining",
            f"instance state {state!r} does not take a node away",
            clip(event.detail_type),
            clip(event.id),
            (event.detail.instance_id,),
        )
    return _interruption(
        event,
        "state-change",
        (event.detail.instance_id,),
        deadline=_epoch(event.time) + STATE_CHANGE_DEADLINE_SECONDS,
        state=state,
    )


def _health(event: HealthScheduledChangeEvent) -> Interruption | Ignored:
    d = event.detail
    ids = tuple(dict.fromkeys(e.entityValue for e in d.affectedEntities if _INSTANCE_ID.fullmatch(e.entityValue)))
    if not ids:
        return Ignored(
            "no-instances", "scheduled change lists no EC2 instance", clip(event.detail_type), clip(event.id)
        )
    start = None if d.startTime is None else _epoch(d.startTime)
    return _interruption(
        event,
        "scheduled-change",
        ids,
        deadline=start,
        region=d.eventRegion or event.region,
        window_start=start,
        window_end=None if d.endTime is None else _epoch(d.endTime),
        event_type_code=clip(d.eventTypeCode),
        change_arn=clip(d.eventArn, 400),
        change_status=d.statusCode or "upcoming",
        change_updated=_epoch(d.lastUpdatedTime or event.time),
    )


def _interruption(
    event: EventBridgeModel,
    kind: Kind,
    instance_ids: tuple[str, ...],
    *,
    deadline: float | None,
    region: str | None = None,
    **extra: Any,
) -> Interruption:
    return Interruption(
        kind=kind,
        event_id=clip(event.id),
        event_time=_epoch(event.time),
        region=clip(region or event.region),
        account=clip(event.account),
        instance_ids=instance_ids,
        deadline=deadline,
        detail_type=clip(event.detail_type),
        **extra,
    )


def _epoch(moment: datetime) -> float:
    # EventBridge times are UTC; a zone-less time is taken as UTC rather than the host's zone.
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _event_id(raw: Mapping[str, Any]) -> str | None:
    value = raw.get("id")
    return clip(value) if isinstance(value, str) else None


def _check_limits(raw: Mapping[str, Any]) -> None:
    """Depth first, without recursion (json.dumps itself recurses), then EventBridge's size limit."""
    stack: list[tuple[object, int]] = [(raw, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EVENT_DEPTH:
            raise MalformedEvent("<event>", f"nested deeper than {MAX_EVENT_DEPTH} levels; no AWS event is")
        if isinstance(node, Mapping):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, Mapping | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, Mapping | list))
    size = len(json.dumps(raw, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8", "replace"))
    if size > MAX_EVENT_BYTES:
        raise MalformedEvent(
            "<event>", f"{size} bytes, over EventBridge's event size limit of {MAX_EVENT_BYTES} bytes (256 KB)"
        )


def _malformed(exc: ValidationError) -> MalformedEvent:
    first = exc.errors(include_url=False)[0]
    path = ".".join(clip(str(part), 40) for part in first["loc"]) or "<event>"
    msg = clip(str(first["msg"]), 200)
    return MalformedEvent(path, msg[:1].lower() + msg[1:])

"""Escalation with an approval (HELD_APPROVAL=on): the ``held`` notification carries an approval id, and an
operator's decision (``drain-orchestrator approve ID --force|--continue|--abandon|--wait``) steers the drain.

The approval id is the id of one durable callback, created when the drain is first said to be held, with a timeout
of the time left to the deadline minus what completing the lifecycle action needs. The execution does not block
on it: a lifecycle action must be heartbeated more often than an operator answers, and one callback id cannot be
re-created per heartbeat slice. So the drain goes on as without approval (durable waits between passes, no
compute billed, heartbeats when due), and before each pass an ``approval-<n>`` step looks at the callback once;
its answer is checkpointed, so a replay takes the same branch. A decision is acted on at the next pass, at
most RECHECK_MAX_SECONDS (plus one pass) after it was sent. No decision by the callback's timeout: the deadline
policy applies as without approval.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from aws_durable_execution_sdk_python import StepContext, durable_step
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration

from drain_orchestrator.observability import logger
from drain_orchestrator.outcome import Result
from drain_orchestrator.workflow.pace import Pace, step_config
from drain_orchestrator.workflow.results import Checkpointed

# kept free before the deadline for the verdict: completing the lifecycle action (retried) and the report
MARGIN_SECONDS = 30


class Choice(StrEnum):
    FORCE = "force"  # delete the held pods now, grace clipped to the deadline
    CONTINUE = "continue"  # complete the lifecycle action with CONTINUE, stop draining
    ABANDON = "abandon"  # complete it with ABANDON, stop draining
    WAIT = "wait"  # keep draining until the deadline, as without approval


# the drain results a decision ends in (their lifecycle results: outcome.RULES)
RESULTS = {Choice.CONTINUE: Result.APPROVED_CONTINUE, Choice.ABANDON: Result.APPROVED_ABANDON}


class DecisionError(ValueError):
    """A callback payload that is not a decision."""


@dataclass(frozen=True)
class OperatorDecision(Checkpointed):
    """What an operator decided, who, and when (ISO 8601 UTC, as sent)."""

    decision: str
    by: str
    at: str

    def payload(self) -> bytes:
        return json.dumps({"decision": self.decision, "by": self.by, "at": self.at}).encode()

    @classmethod
    def parse(cls, raw: str | bytes | None) -> OperatorDecision:
        try:
            data = json.loads(raw or "")
        except ValueError as exc:
            raise DecisionError(f"decision payload: not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise DecisionError("decision payload: expected a JSON object {decision, by, at}")
        choice = data.get("decision")
        if choice not in set(Choice):
            raise DecisionError(f"decision payload: 'decision' must be one of {', '.join(Choice)}, got {choice!r}")
        by, at = data.get("by"), data.get("at")
        if not isinstance(by, str) or not by or not isinstance(at, str) or not at:
            raise DecisionError("decision payload: 'by' and 'at' must be non-empty strings")
        return cls(decision=str(choice), by=by[:256], at=at[:64])


def callback_timeout(now: float, deadline: float) -> int | None:
    """Seconds the approval stays open: until the deadline minus MARGIN_SECONDS; None when no time is left."""
    left = int(deadline - now) - MARGIN_SECONDS
    return left if left >= 1 else None


@dataclass(frozen=True)
class Look(Checkpointed):
    """One look at the approval: ``pending``, ``decided`` (with the decision), ``expired`` (timed out or failed),
    or ``invalid`` (a payload that is not a decision: treated as none, the approval is over)."""

    _nested: ClassVar[dict[str, Any]] = {"decision": OperatorDecision}
    now: float
    state: str
    decision: OperatorDecision | None = None
    message: str = ""


class Approval:
    """The drain's approval: created once, looked at before each pass until it is decided or over."""

    def __init__(self, ctx: Any, now: float, deadline: float) -> None:
        self.callback: Any = None
        self.decision: OperatorDecision | None = None
        self.over = False
        seconds = callback_timeout(now, deadline)
        if seconds is None:
            self.over = True
            return
        config = CallbackConfig(timeout=Duration.from_seconds(seconds))
        self.callback = ctx.create_callback(name="approval", config=config)

    @property
    def id(self) -> str | None:
        return None if self.callback is None else str(self.callback.callback_id)

    def look(self, ctx: Any, pace: Pace, n: int) -> OperatorDecision | None:
        """The decision, the first time it is seen (None: none yet, or the approval is over)."""
        if self.over or self.callback is None:
            return None
        seen: Look = ctx.step(look_step(self.callback), name=f"approval-{n}", config=step_config(Look))
        pace.absorb(seen)
        if seen.state == "pending":
            return None
        self.over = True
        if seen.decision is None:
            logger.warning("approval over without a decision", extra={"state": seen.state, "error": seen.message})
            return None
        self.decision = seen.decision
        logger.warning("approval decided", extra={"approval": self.decision.to_dict(), "approval_id": self.id})
        return seen.decision


@durable_step
def look_step(step_ctx: StepContext, callback: Any) -> Look:
    """Read the callback's state as checkpointed by the service; never blocks (the SDK's ``result()`` suspends
    when no answer is there yet, which here only means: pending)."""
    from aws_durable_execution_sdk_python import CallbackError  # noqa: PLC0415
    from aws_durable_execution_sdk_python.exceptions import SuspendExecution  # noqa: PLC0415

    now = time.time()
    try:
        raw = callback.result()
    except SuspendExecution:
        return Look(now=now, state="pending")
    except CallbackError as exc:
        return Look(now=now, state="expired", message=str(exc)[:300])
    try:
        return Look(now=now, state="decided", decision=OperatorDecision.parse(raw))
    except DecisionError as exc:
        return Look(now=now, state="invalid", message=str(exc))

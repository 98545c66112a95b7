"""Escalation with an approval (HELD_APPROVAL=on): the ``held`` notification carries an approval id, and an
operator's decision (``drain-orchestrator approve ID --force|--continue|--abandon|--wait``) steers the drain.

The approval id is the id of one durable callback, created when the drain is first said to be held, with a timeout
of the time left to the deadline minus what completing the lifecycle action needs. The execution does not block
on it: a lifecycle action must be heartbeated more often than an operator answers, and one callback id cannot be
re-created per heartbeat slice. So the drain goes on as without approval (durable waits between passes, no
compute billed, heartbeats when due), and before a pass an ``approval-check-<n>`` step looks at the callback
once; its answer is checkpointed, so a replay takes the same branch. Looks (and the held waits meanwhile) are
pacing.approval_wait apart at most, and at least: RECHECK_MAX_SECONDS, or longer in a drain so long that looks that
often would pass the execution's operations cap (346 s for 48 h). A decision is acted on at the next look, that
long (plus one pass) after it was sent at most. No decision by the callback's timeout: the deadline
policy applies as without approval.

A decision names the node it is meant for (and may name the drain's event id): anyone holding an approval id (a
relayed message, a mis-pasted id) can answer it, so an answer whose node (or event) is not this drain's is refused
as invalid and changes nothing — the drain goes on under its deadline policy, as without approval. So is an answer
without a node (a command line older than this rule). A callback is answered once, so a refused answer closes the
approval. The approval id is a bearer token for one drain: it goes into the ``held`` notification only, never into
a log line, a node annotation or an Event.

The look's step is ``approval-check-<n>``: ``approval-<n>`` is the step name under which releases whose decisions
name no node checkpoint theirs (step names are a contract with running executions).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from aws_durable_execution_sdk_python import StepContext, durable_step
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration

from drain_orchestrator import pacing
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.outcome import Result
from drain_orchestrator.workflow.checkpoint import Checkpointed, step_config
from drain_orchestrator.workflow.pace import Pace

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
    """What an operator decided, for which node (and event), who, and when (ISO 8601 UTC, as sent). ``by`` is what
    the sender says (the command line puts the caller's ARN from STS there, or ``--as``): the callback API does not
    tell the execution who called it."""

    decision: str
    by: str
    at: str
    node: str = ""
    event_id: str = ""  # optional: the held notification's event_id, checked when given

    def payload(self) -> bytes:
        sent = {"decision": self.decision, "by": self.by, "at": self.at, "node": self.node}
        return json.dumps({**sent, **({"event_id": self.event_id} if self.event_id else {})}).encode()

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
        node, event_id = data.get("node"), data.get("event_id", "")
        if not isinstance(node, str) or not node:
            raise DecisionError(
                "decision payload: 'node' missing: a decision must name the node it is for "
                "(drain-orchestrator approve ID --node NODE; a command line older than this release sends none)"
            )
        if not isinstance(event_id, str):
            raise DecisionError(f"decision payload: 'event_id' must be a string, got {type(event_id).__name__}")
        return cls(decision=str(choice), by=by[:256], at=at[:64], node=node[:256], event_id=event_id[:128])

    def mismatch(self, node: str, event_id: str) -> str | None:
        """Why this decision is not for the drain of ``node`` (and ``event_id``), or None when it is."""
        if self.node != node:
            return f"the decision names node {self.node!r}; this drain is node {node!r}"
        if self.event_id and self.event_id != event_id:
            return f"the decision names event {self.event_id!r}; this drain is event {event_id!r}"
        return None


def callback_timeout(now: float, deadline: float) -> int | None:
    """Seconds the approval stays open: until the deadline minus MARGIN_SECONDS; None when no time is left."""
    left = int(deadline - now) - MARGIN_SECONDS
    return left if left >= 1 else None


@dataclass(frozen=True)
class Look(Checkpointed):
    """One look at the approval: ``pending``, ``decided`` (with the decision), ``expired`` (timed out or failed),
    or ``invalid`` (a payload that is not a decision, or one for another node or event: treated as none, the
    approval is over; ``decision`` holds a refused decision that could be read)."""

    _nested: ClassVar[dict[str, Any]] = {"decision": OperatorDecision}
    now: float
    state: str
    decision: OperatorDecision | None = None
    message: str = ""


class Approval:
    """The drain's approval: created once, looked at before a pass (every ``every`` s at most) until it is decided
    or over."""

    def __init__(self, ctx: Any, now: float, deadline: float, node: str, event_id: str, every: int) -> None:
        self.node, self.event_id = node, event_id
        self.every = every  # seconds between two looks (pacing.approval_wait), and the longest held wait meanwhile
        self.looked: float | None = None
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
        """The decision, the first time it is seen (None: none yet, or the approval is over). Looked at once
        ``every`` seconds at most: a pass that comes sooner (a drain that is not held) goes on without a look."""
        if self.over or self.callback is None:
            return None
        if self.looked is not None and not pacing.look_due(self.looked, self.every, pace.now):
            return None
        self.looked = pace.now
        seen: Look = ctx.step(
            look_step(self.callback, self.node, self.event_id), name=f"approval-check-{n}", config=step_config(Look)
        )
        pace.absorb(seen)
        if seen.state == "pending":
            return None
        self.over = True
        if seen.state == "invalid":  # never the approval id: it would let any log reader answer the next one
            refused = seen.decision.to_dict() if seen.decision is not None else None
            logger.warning("approval refused", extra={"reason": seen.message, "refused": refused})
            return None
        if seen.decision is None:
            logger.warning("approval over without a decision", extra={"state": seen.state, "error": seen.message})
            return None
        self.decision = seen.decision
        logger.warning("approval decided", extra={"approval": self.decision.to_dict()})
        return seen.decision


@durable_step
def look_step(step_ctx: StepContext, callback: Any, node: str, event_id: str) -> Look:
    """Read the callback's state as checkpointed by the service; never blocks (the SDK's ``result()`` suspends
    when no answer is there yet, which here only means: pending). A decision for another node or event is
    ``invalid``, and counted (Errors, reason approval-refused)."""
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
        decision = OperatorDecision.parse(raw)
    except DecisionError as exc:
        metric("Errors", reason="approval-refused")
        return Look(now=now, state="invalid", message=str(exc))
    wrong = decision.mismatch(node, event_id)
    if wrong is not None:
        metric("Errors", reason="approval-refused")
        return Look(now=now, state="invalid", decision=decision, message=f"refused: {wrong}")
    return Look(now=now, state="decided", decision=decision)

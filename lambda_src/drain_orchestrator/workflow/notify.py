"""Drain notifications to the SNS topic, one per phase (docs/notifications.md): best effort by design.

A notification reports a drain; it must never stop one. An SNS failure (topic deleted, permission missing, an
outage) is logged and counted as ``Errors`` with reason ``notify-failed``, and the drain goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drain_orchestrator.observability import logger, metric
from drain_orchestrator.workflow import runtime

if TYPE_CHECKING:
    from drain_orchestrator.workflow.job import DrainJob


def notify(phase: str, job: DrainJob, extra: dict[str, Any]) -> bool:
    """Publish one notification; True if it was sent (False: no topic, dry run, or SNS failed)."""
    topic = runtime.settings().notification_topic_arn
    if not topic or runtime.wsettings().dry_run:
        return False
    from drain_orchestrator.aws.sns import publish  # noqa: PLC0415

    decision, event = job.decision, job.event
    message = {
        "phase": phase,
        "cluster": decision.cluster,
        "node": decision.node,
        "instance_id": decision.instance_id,
        "kind": event.kind,
        "event_id": event.event_id,
        **extra,
    }
    try:
        publish(runtime.sns(), topic, f"drain {phase}: {decision.node} ({decision.cluster})", message)
    except Exception as exc:
        metric("Errors", reason="notify-failed")
        logger.warning(
            "notification not sent", extra={"phase": phase, "error_type": type(exc).__name__, "error": str(exc)[:300]}
        )
        return False
    return True

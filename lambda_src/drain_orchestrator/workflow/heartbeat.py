"""Keep a lifecycle action alive while a step runs: a thread that records heartbeats when they fall due.

Between steps the flow beats with its own heartbeat steps (durable waits end when a beat is due); inside a step
that may run long (a drain pass, a slow or unreachable API) this keeper beats, so the gap between two heartbeats
stays under the hook's HeartbeatTimeout whatever a step costs. Heartbeats are idempotent: an extra one is harmless.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING

from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.interruption import Interruption, LifecycleRef
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.workflow import runtime

if TYPE_CHECKING:
    from drain_orchestrator.workflow.job import DrainJob


def beat(ref: LifecycleRef, instance_id: str) -> str:
    """One RecordLifecycleActionHeartbeat: "recorded", or "already-done" when the action is over."""
    from drain_orchestrator.aws.autoscaling import record_heartbeat  # noqa: PLC0415

    return record_heartbeat(
        runtime.autoscaling(), ref.asg_name, ref.hook_name, token=ref.token, instance_id=instance_id
    )


def denied(event: Interruption, exc: ApiError) -> None:
    """The first AccessDenied on the lifecycle action: said once, never retried (lifecycle-access-denied)."""
    ref = event.lifecycle
    logger.error(
        "IAM denies the lifecycle calls on this group: no more heartbeats, no completion (lifecycle-access-denied)",
        extra={
            "asg": ref.asg_name if ref else None,
            "hook": ref.hook_name if ref else None,
            "error": str(exc)[:300],
            "reason": "lifecycle-access-denied",
        },
    )


class _Backoff:
    """Failed beats of one lifecycle action in this container, whoever sent them: each step starts a keeper of its
    own, and the flow beats between steps; without this a new keeper would retry a refused beat from 2 s again, and
    between the flow's. Only a thread's pace reads it: the flow's own heartbeat steps back off on their checkpointed
    results (Pace), and merely say here how theirs went."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.failed: dict[tuple[str, str, str], tuple[int, float]] = {}  # action -> (failures in a row, last at)

    def failure(self, key: tuple[str, str, str]) -> None:
        with self.lock:
            self.failed[key] = (self.failed.get(key, (0, 0.0))[0] + 1, time.time())

    def success(self, key: tuple[str, str, str]) -> None:
        with self.lock:
            self.failed.pop(key, None)

    def retry_at(self, key: tuple[str, str, str], interval: int, last_beat: float | None) -> float:
        """When the next try is due after the failures so far (0: none failed)."""
        from drain_orchestrator.deadlines import beat_retry_delay  # noqa: PLC0415

        with self.lock:
            failures, at = self.failed.get(key, (0, 0.0))
        if not failures:
            return 0.0
        lapses = (last_beat or at) + 3 * interval  # the hook's timeout is at least three intervals
        return at + beat_retry_delay(failures - 1, interval, at, lapses)


def action_key(ref: LifecycleRef, instance_id: str) -> tuple[str, str, str]:
    return (ref.asg_name, ref.hook_name, instance_id)


BACKOFF = _Backoff()


class HeartbeatKeeper:
    """``with HeartbeatKeeper(...) as keeper:`` beats every ``interval`` seconds after ``last_beat`` until the block
    ends; ``keeper.last_beat`` and ``keeper.hook_done`` tell the flow what happened."""

    def __init__(
        self, ref: LifecycleRef | None, instance_id: str, interval: int | None, last_beat: float | None
    ) -> None:
        self.ref, self.instance_id, self.interval = ref, instance_id, interval
        self.last_beat = last_beat
        self.hook_done = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def of(cls, job: DrainJob, last_beat: float | None) -> HeartbeatKeeper:
        """The keeper of a drain's step: its lifecycle action, at the pace planned for the drain."""
        return cls(job.event.lifecycle, job.decision.instance_id, job.plan.heartbeat_interval, last_beat)

    def __enter__(self) -> HeartbeatKeeper:
        if self.ref is not None and self.interval and not runtime.wsettings().dry_run:
            self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        """Beat when due. A failed beat is tried again later each time (deadlines.beat_retry_delay, shared by
        everything that beats this action, BACKOFF); IAM's refusal or a deleted group stops the thread without
        marking the hook done, so the flow's own next heartbeat step meets the same answer and ends the drain by it
        (lifecycle-access-denied, group-gone); an action no longer waiting (someone else completed it, it timed out)
        is done."""
        assert self.ref is not None and self.interval
        key = action_key(self.ref, self.instance_id)
        due = max((self.last_beat or time.time()) + self.interval, BACKOFF.retry_at(key, self.interval, self.last_beat))
        while not self._stop.wait(max(0.0, due - time.time())):
            try:
                outcome = beat(self.ref, self.instance_id)
            except ApiError as exc:
                metric("Errors", reason="heartbeat-failed")
                logger.warning("lifecycle heartbeat failed", extra={"error_kind": exc.kind.value, "error": str(exc)})
                if exc.kind is FailureKind.FORBIDDEN:
                    return
                BACKOFF.failure(key)
                due = BACKOFF.retry_at(key, self.interval, self.last_beat)
                continue
            except Exception as exc:  # a defect here must not kill the step; the flow's beat steps go on
                logger.exception("lifecycle heartbeat failed", extra={"error": str(exc)[:300]})
                BACKOFF.failure(key)
                due = BACKOFF.retry_at(key, self.interval, self.last_beat)
                continue
            BACKOFF.success(key)
            if outcome == "group-gone":
                logger.info("lifecycle action's group is gone", extra={"instance_id": self.instance_id})
                return
            self.last_beat = time.time()
            if outcome == "already-done":
                self.hook_done = True
                logger.info("lifecycle action no longer active", extra={"instance_id": self.instance_id})
                return
            due = self.last_beat + self.interval

"""Typed failures of the APIs the orchestrator calls, and how long each kind is worth retrying.

The adapters (`kube/`, `aws/`) turn HTTP statuses, AWS error codes and connection errors into `ApiError` with a
`FailureKind`; nothing above them looks at an error's text. The workflow retries a failed step with durable waits
according to `RETRY_POLICIES`, always bounded by the drain's deadline (see deadlines.py), then takes the failure
path, whatever the kind. Stdlib only: `pacing.worst_case` counts what these retries cost, at cold start and at
`cdk synth` (the construct loads this module on its own: settings_seam.py).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from enum import StrEnum


class FailureKind(StrEnum):
    NOT_FOUND = "not-found"
    UNAUTHORIZED = "unauthorized"  # 401: no valid identity (token rejected, access entry missing)
    FORBIDDEN = "forbidden"  # 403: known identity, not allowed (RBAC, IAM)
    CONFLICT = "conflict"  # 409: lost a race; read again
    THROTTLED = "throttled"  # 429, AWS Throttling / RequestLimitExceeded
    UNAVAILABLE = "unavailable"  # 5xx with any body, connection refused or reset, timeouts
    INVALID = "invalid"  # the request itself is wrong (400, 422): retrying cannot help
    UNEXPECTED = "unexpected"  # not an API error at all: a defect, retried a few times then given up


class ApiError(Exception):
    """An API call failed; ``kind`` says what retrying can do about it."""

    def __init__(self, kind: FailureKind, service: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{service}: {message}")
        self.kind = kind
        self.service = service
        self.status = status


def kind_for_status(status: int) -> FailureKind:
    """The failure kind of an HTTP status (Kubernetes and AWS alike)."""
    if status == 401:
        return FailureKind.UNAUTHORIZED
    if status == 403:
        return FailureKind.FORBIDDEN
    if status == 404:
        return FailureKind.NOT_FOUND
    if status == 409:
        return FailureKind.CONFLICT
    if status == 429:
        return FailureKind.THROTTLED
    if status >= 500:
        return FailureKind.UNAVAILABLE
    return FailureKind.INVALID


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff between ``first`` and ``cap`` seconds; ``attempts`` None = until the deadline.

    After ``slow_after`` failures in a row the delay becomes ``slow_cap``, and the wait is never shorter than the
    drain's retry spacing (:meth:`window`): an outage of hours must not spend the execution's durable operations
    (each retry is a step and a wait) on retries every few seconds."""

    first: int
    cap: int
    attempts: int | None = None
    slow_after: int = 20
    slow_cap: int = 120

    def delay(self, attempt: int) -> int:
        if attempt >= self.slow_after:
            return max(self.cap, self.slow_cap)
        return int(min(self.cap, self.first * 2 ** min(attempt, 16)))

    def window(self, attempt: int, spacing: int = 1) -> tuple[int, int]:
        """The shortest and longest wait before the retry after ``attempt``: from 1 s to :meth:`delay`; once past
        ``slow_after`` failures, from ``spacing`` (pacing.loop_spacing: the retries of an outage as long as the
        drain then fit its durable operations, whatever the draws) to a quarter more, or to :meth:`delay` when
        that is longer."""
        top = self.delay(attempt)
        if attempt < self.slow_after or spacing <= 1:
            return 1, top
        return spacing, max(top, spacing + spacing // 4)

    def jittered(self, attempt: int, key: str, spacing: int = 1) -> int:
        """Full jitter: the wait before the retry after ``attempt`` drawn evenly over :meth:`window`, so the
        executions a storm failed together (one throttled API, one apiserver restart) come back spread out instead
        of in step. The draw is a hash of ``key`` (the step's name and attempt and the failed result's checkpointed
        time), not a random number: a replay of the execution waits exactly as its first run did."""
        low, top = self.window(attempt, spacing)
        draw = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2.0**64
        return max(low, math.ceil(low - 1 + draw * (top - low + 1)))

    def gives_up_after(self, attempt: int) -> bool:
        """True when ``attempt`` (0 = the first failure) was the last one this policy allows."""
        return self.attempts is not None and attempt + 1 >= self.attempts


# One home for the retry rules. A revoked access entry or a missing RBAC binding may be fixed by an operator
# within minutes, and an outage may last longer than any library's retries: both wait until the deadline.
RETRY_POLICIES: dict[FailureKind, RetryPolicy] = {
    FailureKind.UNAVAILABLE: RetryPolicy(first=2, cap=30),
    FailureKind.THROTTLED: RetryPolicy(first=5, cap=60),
    FailureKind.UNAUTHORIZED: RetryPolicy(first=5, cap=30),
    FailureKind.FORBIDDEN: RetryPolicy(first=5, cap=30),
    FailureKind.CONFLICT: RetryPolicy(first=1, cap=5),
    FailureKind.NOT_FOUND: RetryPolicy(first=1, cap=1, attempts=1),
    FailureKind.INVALID: RetryPolicy(first=1, cap=1, attempts=1),
    FailureKind.UNEXPECTED: RetryPolicy(first=2, cap=10, attempts=3),
}


@dataclass(frozen=True)
class InPlaceRetry:
    """A few quick resends inside one step, for an answer that says the request was never executed and when to try
    again: API Priority and Fairness turns a request away with 429 and Retry-After when its priority level is full.
    Each wait honours Retry-After up to ``max_wait`` plus up to ``jitter`` seconds (the turned-away clients of a
    storm must not come back in step); after ``attempts`` sends the answer goes up to the step's durable retry."""

    attempts: int
    max_wait: float
    jitter: float

    def wait(self, retry_after: float | None, draw: float) -> float:
        """Seconds before the next send: ``retry_after`` (1 s when the server named none), capped, plus
        ``draw`` (0..1) of the jitter."""
        asked = retry_after if retry_after is not None and retry_after > 0 else 1.0
        return min(self.max_wait, asked) + self.jitter * draw


# three sends over at most ~5 s: a storm's burst passes within that; a level full for longer is the step's retry
APF_RETRY = InPlaceRetry(attempts=3, max_wait=2.0, jitter=0.5)


def kind_of(exc: BaseException) -> FailureKind:
    return exc.kind if isinstance(exc, ApiError) else FailureKind.UNEXPECTED

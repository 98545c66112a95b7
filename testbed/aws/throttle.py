"""The account limits a fleet-wide reclaim runs into, emulated: EC2's request token buckets (``RequestLimitExceeded``)
and Lambda's concurrency (a throttled invocation, queued and retried). Pure logic with an injected clock; the
emulator's routes (server.py) and the benchmark's event delivery (bench/bench_reclaim.py) use it. Both are off
until a bed turns them on (``POST /_testbed/throttle``), so tests see an unthrottled account unless they ask.

EC2 (the "Request throttling for the Amazon EC2 API" page): each API action has its own bucket, sized and refilled by
the action's category; a request takes one token or is refused with ``RequestLimitExceeded`` (HTTP 503), and the
bucket refills at its rate up to its size. The refill here is continuous (20/s is a token every 50 ms), not a step
a second: the same tokens a second, without a step that would make every waiting retry collide on the tick. The
resource-intensive category (RunInstances and the like) is not emulated: the product calls no such action.

Lambda (asynchronous invocation, as EventBridge invokes): the event is accepted, and a run beyond the function's or
account's concurrency is throttled and requeued by Lambda with a backoff from 1 s growing to 5 minutes, for up to
6 hours. ``requeue_delay`` is that schedule (doubling, with jitter: the documentation gives the range, not the law).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum


class Ec2Category(Enum):
    NON_MUTATING = "non-mutating"  # Describe*, Get*, List* with filters, ids or pagination
    UNFILTERED_NON_MUTATING = "unfiltered-non-mutating"  # Describe* with no ids, filters or page size
    MUTATING = "mutating"  # everything else


# (bucket size, refill per second) per category, as AWS documents them for an account and Region
EC2_DEFAULT_LIMITS: dict[Ec2Category, tuple[float, float]] = {
    Ec2Category.NON_MUTATING: (100, 20),
    Ec2Category.UNFILTERED_NON_MUTATING: (50, 10),
    Ec2Category.MUTATING: (200, 5),
}
LAMBDA_DEFAULT_CONCURRENCY = 1000  # per account and Region, shared by every function
_NARROWING = ("InstanceId.", "Filter.", "MaxResults", "NextToken")
_READ_PREFIXES = ("Describe", "Get", "List")
REQUEUE_FIRST_S, REQUEUE_MAX_S = 1.0, 300.0


def ec2_category(action: str, params: Mapping[str, str]) -> Ec2Category:
    """The bucket category of an EC2 query-API request (its ``Action`` and form parameters)."""
    if not action.startswith(_READ_PREFIXES):
        return Ec2Category.MUTATING
    if any(k.startswith(_NARROWING) for k in params):
        return Ec2Category.NON_MUTATING
    return Ec2Category.UNFILTERED_NON_MUTATING


@dataclass
class TokenBucket:
    """``size`` tokens at most, ``refill_per_s`` added back continuously; ``take`` spends one if there is one."""

    size: float
    refill_per_s: float
    tokens: float
    at: float  # clock reading of the last update

    def __post_init__(self) -> None:
        if self.size < 1 or self.refill_per_s < 0:
            raise ValueError(f"a token bucket needs a size of at least 1 and a refill of 0 or more per second, "
                             f"got size {self.size}, refill {self.refill_per_s}")  # fmt: skip

    @classmethod
    def full(cls, size: float, refill_per_s: float, now: float) -> TokenBucket:
        return cls(size, refill_per_s, size, now)

    def take(self, now: float) -> bool:
        self.tokens = min(self.size, self.tokens + max(0.0, now - self.at) * self.refill_per_s)
        self.at = max(self.at, now)
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


@dataclass
class Ec2Throttle:
    """One bucket per EC2 action (created full on its first request), sized by the action's category."""

    limits: dict[Ec2Category, tuple[float, float]] = field(default_factory=lambda: dict(EC2_DEFAULT_LIMITS))
    clock: Callable[[], float] = time.monotonic
    buckets: dict[str, TokenBucket] = field(default_factory=dict)
    admitted: dict[str, int] = field(default_factory=dict)
    throttled: dict[str, int] = field(default_factory=dict)

    def admit(self, action: str, params: Mapping[str, str]) -> bool:
        now = self.clock()
        bucket = self.buckets.get(action)
        if bucket is None:
            bucket = self.buckets[action] = TokenBucket.full(*self.limits[ec2_category(action, params)], now)
        ok = bucket.take(now)
        tally = self.admitted if ok else self.throttled
        tally[action] = tally.get(action, 0) + 1
        return ok


@dataclass
class ConcurrencyCap:
    """At most ``limit`` runs at once; ``acquire`` refuses (a throttle) rather than waits, as Lambda does."""

    limit: int
    running: int = 0
    peak: int = 0
    admitted: int = 0
    throttled: int = 0

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"a concurrency cap needs a limit of at least 1, got {self.limit}")

    def acquire(self) -> bool:
        if self.running >= self.limit:
            self.throttled += 1
            return False
        self.running += 1
        self.admitted += 1
        self.peak = max(self.peak, self.running)
        return True

    def release(self) -> None:
        if self.running == 0:
            raise RuntimeError("concurrency released more often than acquired")
        self.running -= 1


def requeue_delay(attempt: int, rng: random.Random) -> float:
    """Seconds before Lambda retries a throttled asynchronous run the ``attempt``-th time (0 first): doubling from
    1 s to at most 5 minutes, each drawn between half and all of that (jitter keeps the retries from colliding)."""
    ceiling = min(REQUEUE_MAX_S, REQUEUE_FIRST_S * 2.0 ** max(0, attempt))
    return max(REQUEUE_FIRST_S, ceiling * rng.uniform(0.5, 1.0))


class AccountLimits:
    """The emulator's switchable limits (thread-safe): EC2's buckets and the Lambda concurrency, each off (None)
    until configured."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.lock = threading.Lock()
        self.clock = clock
        self.ec2: Ec2Throttle | None = None
        self.concurrency: ConcurrencyCap | None = None

    def configure(self, body: Mapping[str, object]) -> dict[str, object]:
        """``{"ec2": true | false | {"non-mutating": [size, refill], ...}, "lambda_concurrency": N | null}``; a key
        left out keeps its setting. Raises ValueError naming the bad field."""
        with self.lock:
            if "ec2" in body:
                self.ec2 = _ec2_of(body["ec2"], self.clock)
            if "lambda_concurrency" in body:
                n = body["lambda_concurrency"]
                if n is not None and (not isinstance(n, int) or isinstance(n, bool)):
                    raise ValueError(f"lambda_concurrency: expected a whole number or null, got {n!r}")
                self.concurrency = None if n is None else ConcurrencyCap(n)
            return self._describe()

    def admit_ec2(self, action: str, params: Mapping[str, str]) -> bool:
        with self.lock:
            return self.ec2 is None or self.ec2.admit(action, params)

    def acquire_invocation(self) -> bool:
        with self.lock:
            return self.concurrency is None or self.concurrency.acquire()

    def release_invocation(self) -> None:
        with self.lock:
            if self.concurrency is not None:
                self.concurrency.release()

    def describe(self) -> dict[str, object]:
        with self.lock:
            return self._describe()

    def clear(self) -> None:
        with self.lock:
            self.ec2, self.concurrency = None, None

    def _describe(self) -> dict[str, object]:
        out: dict[str, object] = {"ec2": None, "lambda": None}
        if self.ec2 is not None:
            out["ec2"] = {
                "limits": {c.value: list(v) for c, v in self.ec2.limits.items()},
                "admitted": dict(self.ec2.admitted),
                "throttled": dict(self.ec2.throttled),
            }
        if self.concurrency is not None:
            c = self.concurrency
            out["lambda"] = {"limit": c.limit, "running": c.running, "peak": c.peak, "admitted": c.admitted,
                             "throttled": c.throttled}  # fmt: skip
        return out


def _ec2_of(value: object, clock: Callable[[], float]) -> Ec2Throttle | None:
    if value is False or value is None:
        return None
    if value is True:
        return Ec2Throttle(clock=clock)
    if not isinstance(value, Mapping):
        raise ValueError(f"ec2: expected true, false or a map of category to [size, refill], got {value!r}")
    limits = dict(EC2_DEFAULT_LIMITS)
    names = {c.value: c for c in Ec2Category}
    for name, pair in value.items():
        if name not in names:
            raise ValueError(f"ec2.{name}: unknown category, expected one of {sorted(names)}")
        if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(x, int | float) for x in pair)):
            raise ValueError(f"ec2.{name}: expected [bucket size, refill per second], got {pair!r}")
        TokenBucket.full(float(pair[0]), float(pair[1]), 0.0)  # validates
        limits[names[name]] = (float(pair[0]), float(pair[1]))
    return Ec2Throttle(limits=limits, clock=clock)


LIMITS = AccountLimits()

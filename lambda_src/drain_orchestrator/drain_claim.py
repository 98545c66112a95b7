"""One drain per node, however many executions want it (pure rules; kube/node_claim.py stores them on the node).

Several events for one instance (its lifecycle hook, a Spot warning, a state change) start one execution each. The
first to write the node's claim drains; the others wait for its verdict and answer their own lifecycle actions from
it. Each waiter records its deadline in the claim, so the holder drains to the earliest. The holder renews the
claim at every drain pass; a claim not renewed by its expiry (a holder that died) is taken over by the next
execution that looks. A verdict is only adopted by the executions that waited for it: a later event finds the drain
over and starts a new one (a drained node then drains in one pass).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any


class Role(StrEnum):
    HOLDER = "holder"  # drains the node
    WAITER = "waiter"  # waits for the holder's verdict
    SETTLED = "settled"  # the drain it waited for has its verdict


@dataclass(frozen=True)
class NodeClaim:
    holder: str  # the run id of the execution draining the node
    expires: float  # epoch seconds: taken over by the next look after this
    deadlines: dict[str, float] = field(default_factory=dict)  # run id -> that execution's deadline
    since: float = 0.0  # when the holder took it
    verdict: str | None = None  # the holder's drain result, once it has one

    @property
    def earliest(self) -> float:
        return min(self.deadlines.values())

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | None) -> NodeClaim | None:
        """The stored claim; None when absent or unreadable (a hand-edited annotation is no claim to honour)."""
        if not raw:
            return None
        try:
            data: dict[str, Any] = json.loads(raw)
            deadlines = {str(k): float(v) for k, v in dict(data.get("deadlines") or {}).items()}
            verdict = data.get("verdict")
            return cls(
                holder=str(data["holder"]),
                expires=float(data["expires"]),
                deadlines=deadlines,
                since=float(data.get("since") or 0.0),
                verdict=None if verdict is None else str(verdict),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


@dataclass(frozen=True)
class Look:
    """What one execution found (and wrote) on the node."""

    role: Role
    claim: NodeClaim
    took_over: str | None = None  # the expired holder this execution replaced


def look(current: NodeClaim | None, run: str, deadline: float, now: float, ttl: float) -> Look:
    """Take the claim, wait on it, or adopt its verdict. ``current`` is the stored claim; ``Look.claim`` is what to
    store (unchanged when equal to ``current``)."""
    fresh = NodeClaim(holder=run, expires=now + ttl, deadlines={run: deadline}, since=now)
    if current is None or (current.verdict is not None and run not in current.deadlines):
        return Look(Role.HOLDER, fresh)  # no drain, or one that ended before this execution asked: drain
    if current.verdict is not None:
        return Look(Role.SETTLED, current)
    deadlines = {**current.deadlines, run: min(deadline, current.deadlines.get(run, deadline))}
    if current.holder == run:
        return Look(Role.HOLDER, replace(current, deadlines=deadlines))
    if current.expires <= now:
        took = replace(current, holder=run, expires=now + ttl, deadlines=deadlines, since=now)
        return Look(Role.HOLDER, took, took_over=current.holder)
    return Look(Role.WAITER, replace(current, deadlines=deadlines))


@dataclass(frozen=True)
class Ask:
    """One execution's look at the claim (``look``), to be taken in another write: the cordon's."""

    run: str
    deadline: float
    now: float
    ttl: float

    def look(self, current: NodeClaim | None) -> Look:
        return look(current, self.run, self.deadline, self.now, self.ttl)


def renew(current: NodeClaim | None, run: str, now: float, ttl: float) -> NodeClaim | None:
    """The holder's renewal at a drain pass; None when it no longer holds the claim (taken over after expiry)."""
    if current is None or current.holder != run or current.verdict is not None:
        return None
    return replace(current, expires=max(current.expires, now + ttl))


def settle(current: NodeClaim | None, run: str, result: str) -> NodeClaim | None:
    """The holder's verdict for its waiters; None when there is nothing to write (not the holder, or settled)."""
    if current is None or current.holder != run or current.verdict is not None:
        return None
    return replace(current, verdict=result)


def claim_ttl(drain_pass_seconds: int, recheck_max_seconds: int) -> float:
    """How long a claim outlives its last renewal: two passes and the longest wait between them."""
    return float(2 * drain_pass_seconds + recheck_max_seconds)

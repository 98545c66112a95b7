"""One DescribeInstances for many executions, once EC2 throttles them.

Every event reads its instances from EC2 before it acts (ownership by tags, the node's DNS name, corroboration).
EC2's bucket for such reads holds 100 requests and refills 20 a second per account and Region, so in a fleet-wide
Spot reclaim of 1,000 nodes the last events would wait ~45 s for a read of their own, past the point where a cordon
helps. Executions do not share memory, so they share a table (aws/reads_table.py): an execution that EC2 throttled
leaves the ids it needs there, and whichever execution holds the table's lease reads every id left since the last
read in one call (up to ``ROUND_IDS``) and publishes the answers; the others find theirs in the table.

What the waiting execution accepts is as fresh as a read of its own: facts from a read sent after it left its ids
(``read_ms >= wanted_ms``), so corroboration still checks what EC2 says after the event, never an older answer; and
never facts dated ahead of its clock or about another instance (``believable``). The table is written only by the
function's role.

Liveness: the lease lapses after ``LEASE_SECONDS`` (a holder that dies stops nobody for longer); a waiter leaves its
ids again every ``REWANT_SECONDS`` (an id left while a holder was reading is picked up by the next round); a waiter
that is not answered within its budget raises THROTTLED, which the event's step retries with durable waits, from a
read of its own first.

Pure: the table, EC2's read, the clock and the sleep are given.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.failures import ApiError, FailureKind

LEASE_SECONDS = 15.0  # above a throttled read's own retry window (aws/clients.RETRY_WINDOW_SECONDS)
REWANT_SECONDS = 3.0
# A want's key carries the waiter's clock; containers' clocks agree to well under this, and wants committed just
# before the last round's query started are read again rather than missed.
SKEW_MARGIN_SECONDS = 2.0
POLL_SECONDS = (0.15, 0.45)  # a waiter looks for its answer this often (jittered so waiters do not align)
# ... and tries the lease at most this often: the lease is one item, and DynamoDB takes about 1,000 writes a second
# on one item; a reclaim's waiters are bounded by the function's concurrency (1,000 by default)
LEASE_TRY_SECONDS = (0.8, 2.4)
ROUND_IDS = 1000  # DescribeInstances' limit of ids per call (the adapter sends 500 a call)
WAIT_SECONDS = 20.0  # a waiter's budget in one step; the event's step retries after it


@dataclass(frozen=True)
class Published:
    """One instance's facts in the table: from a read sent at ``read_ms``; ``facts`` None when EC2 did not know it."""

    read_ms: int
    facts: InstanceFacts | None


class ReadsTable(Protocol):
    @property
    def name(self) -> str: ...

    def leave_wants(self, ids: Sequence[str], wanted_ms: int) -> None: ...

    def published(self, ids: Sequence[str]) -> dict[str, Published]: ...

    def take_lease(self, holder: str, now_ms: int, until_ms: int) -> int | None:
        """The time up to which the last holder answered the wants (0: never), or None when the lease is held."""
        ...

    def wants_since(self, since_ms: int) -> list[tuple[int, str]]:
        """(when, id) of the wants left after ``since_ms``, oldest first."""
        ...

    def publish(self, found: Mapping[str, InstanceFacts | None], read_ms: int) -> None: ...

    def release_lease(self, holder: str, served_ms: int | None) -> None:
        """Give the lease back; ``served_ms``: the wants up to then are answered (None: nothing was)."""
        ...


class SharedReadTimeout(ApiError):
    """No read answered these ids within the waiter's budget: EC2 still throttles (THROTTLED, retried)."""

    def __init__(self, ids: Sequence[str], waited: float) -> None:
        shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        super().__init__(
            FailureKind.THROTTLED, "ec2", f"DescribeInstances throttled: no shared read of {shown} in {waited:.0f}s"
        )


@dataclass
class SharedRead:
    """One execution's wait for ``ids``: its own read when it gets the lease, another's when that comes first."""

    table: ReadsTable
    describe: Callable[[Sequence[str]], dict[str, InstanceFacts | None]]
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    budget_seconds: float = WAIT_SECONDS
    rng: random.Random = field(default_factory=random.Random)
    holder: str = field(default_factory=lambda: uuid.uuid4().hex)
    rounds_read: int = 0  # rounds this execution read for everyone (for its log line and metric)

    def read(self, instance_ids: Sequence[str]) -> dict[str, InstanceFacts | None]:
        ids = list(dict.fromkeys(instance_ids))
        started = self.clock()
        wanted_ms = _ms(started)
        self.table.leave_wants(ids, wanted_ms)
        left_at = lease_due = started
        while True:
            answered = self._answered(ids, wanted_ms)
            if answered is not None:
                return answered
            if self.clock() >= lease_due:
                lease_due = self.clock() + self.rng.uniform(*LEASE_TRY_SECONDS)
                mine = self._read_round(ids)
                if mine is not None:
                    return mine
            now = self.clock()
            if now - started >= self.budget_seconds:
                raise SharedReadTimeout(ids, now - started)
            if now - left_at >= REWANT_SECONDS:
                self.table.leave_wants(ids, _ms(now))
                left_at = now
            self.sleep(self.rng.uniform(*POLL_SECONDS))

    def _answered(self, ids: list[str], wanted_ms: int) -> dict[str, InstanceFacts | None] | None:
        got = self.table.published(ids)
        latest_ms = _ms(self.clock()) + int(SKEW_MARGIN_SECONDS * 1000)
        if all(i in got and believable(i, got[i], wanted_ms, latest_ms) for i in ids):
            return {i: got[i].facts for i in ids}
        return None

    def _read_round(self, ids: list[str]) -> dict[str, InstanceFacts | None] | None:
        """Read for everyone when the lease is free: every id left since the last round, ours first."""
        now_ms = _ms(self.clock())
        served_ms = self.table.take_lease(self.holder, now_ms, now_ms + int(LEASE_SECONDS * 1000))
        if served_ms is None:
            return None
        served_to, found = now_ms, None
        try:
            # a want older than a waiter's budget has no waiter left (a live one leaves its ids again every few
            # seconds): the table's old items, which TTL deletes only eventually, are never read again
            since = max(served_ms - int(SKEW_MARGIN_SECONDS * 1000), now_ms - int(self.budget_seconds * 1000))
            round_ids, left_out_ms = next_round(ids, self.table.wants_since(since))
            if left_out_ms is not None:  # the rest go in the next round
                served_to = min(served_to, left_out_ms - 1)
            read_ms = _ms(self.clock())
            found = self.describe(round_ids)
            self.table.publish(found, read_ms)
            self.rounds_read += 1
        except ApiError as exc:
            if exc.kind is not FailureKind.THROTTLED:
                raise
            found = None  # EC2 still refuses: the lease goes back, the next waiter to take it tries again
        finally:
            self.table.release_lease(self.holder, served_to if found is not None else None)
        return None if found is None else {i: found.get(i) for i in ids}


def believable(instance_id: str, published: Published, wanted_ms: int, latest_ms: int) -> bool:
    """Facts a waiter may take for ``instance_id``: read after it asked and not dated ahead of its clock (an item
    written with a time to come would otherwise answer every later waiter), and about that instance."""
    about = published.facts is None or published.facts.instance_id == instance_id
    return wanted_ms <= published.read_ms <= latest_ms and about


def next_round(ids: list[str], wants: list[tuple[int, str]]) -> tuple[list[str], int | None]:
    """This round's ids: ours, then the oldest wants up to ROUND_IDS; and when the first want left out was left."""
    chosen = dict.fromkeys(ids)
    for wanted_ms, iid in wants:
        if iid in chosen:
            continue
        if len(chosen) >= ROUND_IDS:
            return list(chosen), wanted_ms
        chosen[iid] = None
    return list(chosen), None


def _ms(seconds: float) -> int:
    return int(seconds * 1000)

"""What one drain knows about the node's pods: one record per pod (its refusals, what was sent to it, its drain
policy's release), and the pods' controllers, looked up once per drain.

A record is keyed by the pod's identity "ns/name@uid" (``ident_of``): a new pod under the same name (a StatefulSet's
successor) is another pod with a record of its own. A record with nothing in it is dropped (``blank``), so the
drain holds records only of the pods it has something to remember about. Times are monotonic (engine/clock.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import backoff_delay
from drain_orchestrator.drain.policy import Owner, OwnerKey, PodPolicy, release_time
from drain_orchestrator.drain.report import HeldPod
from drain_orchestrator.engine.clock import Clock

Budget = tuple[str, str]  # (namespace, PodDisruptionBudget name)


def ident_of(p: PodInfo) -> str:
    return f"{p.key}@{p.uid}"


@dataclass
class PodRecord:
    ident: str  # "ns/name@uid"
    # its refusals (cleared by ``forget_refusals`` once it is evicted, deleted or gone)
    attempts: int = 0  # refusals so far
    not_before: float | None = None  # the next try
    pdbs: list[str] = field(default_factory=list)  # the budgets that refused it (or select it)
    last_block: str | None = None  # the last refusal's message
    # refused by named PDBs (namespace, name): retried only when the budget's watch gives this drain its turn
    waiting_on: list[Budget] = field(default_factory=list)
    force_at: float | None = None  # when the deadline policy acts
    last_hold: HeldPod | None = None  # refused or failed: the last reason
    # what was sent to it: outlives its refusals, until a LIST no longer shows it
    sent: bool = False  # evicted or deleted by this drain
    expected_gone: float | None = None  # when the grace it was sent (or shortened to) ends
    # let finish by its drain policy: when it is looked at again (set anew every pass)
    release_at: float | None = None

    @property
    def uid(self) -> str:
        """The pod's uid (the part of its identity after "@")."""
        return self.ident.rsplit("@", 1)[1] if "@" in self.ident else ""

    @property
    def key(self) -> str:
        """The pod's "ns/name", as the report names it."""
        return self.ident.rsplit("@", 1)[0]

    @property
    def timed(self) -> float | None:
        """Its retry time when that is a plain timer (not a PDB's budget to watch)."""
        return None if self.waiting_on else self.not_before

    @property
    def parked(self) -> bool:
        """Refused by several budgets: not retried before the deadline policy's time (``PodRecords.park``)."""
        t = self.timed
        return t is not None and (t == float("inf") or t == self.force_at)

    @property
    def going(self) -> bool:
        """On its way out: sent by this drain, or its grace shortened."""
        return self.sent or self.expected_gone is not None

    @property
    def blank(self) -> bool:
        return self == PodRecord(self.ident)

    def forget_refusals(self) -> None:
        self.attempts, self.not_before, self.pdbs, self.last_block = 0, None, [], None
        self.waiting_on, self.force_at, self.last_hold = [], None, None


class PodRecords:
    """The drain's records of the node's pods. Invariant: no blank record is kept (``tidy`` after every change that
    may empty one); reading an unknown pod (``known``) makes none."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.by_ident: dict[str, PodRecord] = {}
        self.owners: dict[OwnerKey, Owner] = {}  # the pods' controllers (drain/policy.py), looked up once per drain
        self.redeleted: set[str] = set()  # stuck terminating pods deleted again near the deadline (once each)

    def __iter__(self) -> Iterator[PodRecord]:
        return iter(list(self.by_ident.values()))

    def record(self, ident: str) -> PodRecord:
        """The pod's record to write to, made on first use."""
        rec = self.by_ident.get(ident)
        if rec is None:
            rec = self.by_ident[ident] = PodRecord(ident)
        return rec

    def known(self, ident: str) -> PodRecord:
        """The pod's record to read: a blank one, not kept, for a pod the drain knows nothing about."""
        return self.by_ident.get(ident) or PodRecord(ident)

    def tidy(self, ident: str) -> None:
        """Drop the pod's record once nothing is left in it."""
        rec = self.by_ident.get(ident)
        if rec is not None and rec.blank:
            del self.by_ident[ident]

    @property
    def going(self) -> bool:
        """Some pod is on its way out (sent by this drain, or its grace shortened)."""
        return any(r.going for r in self.by_ident.values())

    def forget(self, ident: str) -> None:
        """Drop what the pod's refusals left (it was evicted, deleted or is gone); what was sent to it stays."""
        rec = self.by_ident.get(ident)
        if rec is not None:
            rec.forget_refusals()
            self.tidy(ident)

    def sent(self, ident: str, grace: float) -> None:
        """An eviction or delete with ``grace`` seconds went through: on its way out."""
        rec = self.record(ident)
        rec.sent, rec.expected_gone = True, self.clock.mono() + grace

    def gone(self, rec: PodRecord) -> None:
        """A pod this drain sent on its way is gone (a LIST no longer shows it, or a watch saw it go)."""
        rec.sent, rec.expected_gone = False, None
        self.tidy(rec.ident)

    def retry_later(self, ident: str, options: DrainOptions, after: float | None = None) -> float:
        """Schedule the pod's next eviction attempt: ``after`` seconds when the server said so, else exponential
        backoff with jitter; returns the delay."""
        rec = self.record(ident)
        delay = after or backoff_delay(rec.attempts, options.retry_base, options.retry_cap)
        rec.attempts += 1
        rec.not_before = self.clock.mono() + delay
        return delay

    def park(self, ident: str) -> None:
        """No retry before the deadline policy's time (force_at; never when it will not force): a pod several
        budgets select, which the eviction API never evicts."""
        rec = self.record(ident)
        rec.waiting_on = []
        rec.not_before = float("inf") if rec.force_at is None else rec.force_at

    def note_releases(
        self, verdicts: list[PodVerdict], policies: dict[str, PodPolicy], options: DrainOptions, now: float
    ) -> None:
        """When each pod let finish by its drain policy is looked at again (the deadline policy, a do-not-disrupt
        duration; ``now``: the wall time the verdicts were made at); one that finishes is seen by the pass after the
        next node check."""
        mono = self.clock.mono()
        for ident, rec in list(self.by_ident.items()):
            rec.release_at = None
            self.tidy(ident)
        for v in verdicts:
            if v.verdict is Verdict.HOLD:
                release = release_time(
                    v, policies, options.deadline, options.deadline_margin, options.policy_hold_until
                )
                self.record(ident_of(v.pod)).release_at = mono + max(0.0, release - now)

    def announce_gone(self, present: set[str]) -> list[str]:
        """The pods this drain sent on their way that the LIST no longer shows (404, or a new pod under the same
        name): forgotten as sent; their "ns/name"."""
        out = []
        for rec in list(self.by_ident.values()):
            if rec.sent and rec.ident not in present:
                out.append(rec.key)
                self.gone(rec)
        return out

    def waited_budgets(self) -> set[Budget]:
        """The budgets some pod waits on for its turn."""
        return {p for r in self.by_ident.values() for p in r.waiting_on}

    def next_action(self) -> float:
        """The first time the drain's own clock acts on a pod: a retry timer, the deadline policy, a release."""
        acts = [t for r in self.by_ident.values() for t in (r.timed, r.force_at, r.release_at) if t is not None]
        return min(acts, default=float("inf"))

    def first_wake(self) -> float | None:
        """The first time the drain's own clock acts, ignoring pods parked for good: what a held drain waits for."""
        recs = self.by_ident.values()
        times = [t for r in recs for t in (r.force_at, r.release_at) if t is not None]
        times += [t for r in recs if (t := r.timed) is not None and t != float("inf")]
        return min(times, default=None)

    def sent_uids(self) -> set[str]:
        return {r.uid for r in self.by_ident.values() if r.sent and r.uid}

"""What one drain knows about one pod: its refusals, what was sent to it, and its drain policy's release.

A record is keyed by the pod's identity "ns/name@uid" (``ident_of``): a new pod under the same name (a StatefulSet's
successor) is another pod with a record of its own. A record with nothing in it is dropped (``blank``), so the
drain's state holds only the pods it has something to remember about.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from drain_orchestrator.drain.classify import PodInfo
from drain_orchestrator.drain.report import HeldPod


def ident_of(p: PodInfo) -> str:
    return f"{p.key}@{p.uid}"


@dataclass
class PodRecord:
    ident: str  # "ns/name@uid"
    # its refusals (cleared by ``forget_refusals`` once it is evicted, deleted or gone)
    attempts: int = 0  # refusals so far
    not_before: float | None = None  # monotonic time of the next try
    pdbs: list[str] = field(default_factory=list)  # the budgets that refused it (or select it)
    last_block: str | None = None  # the last refusal's message
    # refused by named PDBs (namespace, name): retried only when the budget's watch gives this drain its turn
    waiting_on: list[tuple[str, str]] = field(default_factory=list)
    force_at: float | None = None  # monotonic time the deadline policy acts
    last_hold: HeldPod | None = None  # refused or failed: the last reason
    # what was sent to it: outlives its refusals, until a LIST no longer shows it
    sent: bool = False  # evicted or deleted by this drain
    expected_gone: float | None = None  # epoch when the grace it was sent (or shortened to) ends
    # let finish by its drain policy: monotonic time it is looked at again (set anew every pass)
    held_until: float | None = None

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
        """Refused by several budgets: not retried before the deadline policy's time (engine/held.py)."""
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

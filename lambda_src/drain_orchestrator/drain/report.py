"""DrainReport: what one drain pass (or a whole drain) did, JSON-serialisable for checkpoints."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from drain_orchestrator.drain.plan import Tier


@dataclass
class BlockedPod:
    pod: str  # namespace/name
    pdbs: list[str]
    message: str


@dataclass
class HeldPod:
    """A pod whose eviction did not go through, and why: what the result, notifications, logs and status show."""

    pod: str  # namespace/name
    reason: str  # kube.evict.HoldReason: pdb, multiple-pdbs, admission-denied, webhook-failed, eviction-failed
    message: str  # the apiserver's own words (the PDB's, the webhook's)
    pdbs: list[str] = field(default_factory=list)
    status: int | None = None  # the HTTP status of the last refusal


@dataclass
class PodReason:
    pod: str
    reason: str


@dataclass
class ForcedPod:
    pod: str
    grace_seconds: int
    reason: str


@dataclass
class SurgeNote:
    """Surge before evict, for one Deployment: what was done (drain/surge.py SurgeStatus) and why."""

    workload: str  # "Deployment namespace/name"
    status: str
    detail: str
    pods: list[str] = field(default_factory=list)  # the PDB-refused pods of the node it was for
    via: str | None = None  # "deployment" (spec.replicas) or "hpa" (minReplicas)
    replicas_before: int | None = None
    replicas_after: int | None = None


@dataclass
class DrainReport:
    node: str
    dry_run: bool = False
    cordoned: bool = False
    drained: bool = False
    evicted: list[str] = field(default_factory=list)
    blocked: list[BlockedPod] = field(default_factory=list)
    skipped: list[PodReason] = field(default_factory=list)
    refused: list[PodReason] = field(default_factory=list)  # kubectl "cannot delete …" errors
    forced: list[ForcedPod] = field(default_factory=list)
    failed: list[PodReason] = field(default_factory=list)
    throttled: list[str] = field(default_factory=list)  # 429 without a PDB cause: retried later
    terminating: list[str] = field(default_factory=list)  # waited on
    # not evicted yet: let finish by their drain policy (wait-for-completion, do-not-disrupt) on a voluntary event
    held_by_policy: list[PodReason] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)  # pods the drain still has to see go
    warnings: list[str] = field(default_factory=list)
    active_tier: Tier | None = None  # stored as its number
    api_calls: int = 0
    elapsed: float = 0.0
    passes: int = 1
    # Pods' grace period as sent (absent = the pod's own), for deadline clipping reports.
    grace_sent: dict[str, int] = field(default_factory=dict)
    retry_after: float | None = None  # largest Retry-After seen from a throttled eviction
    surge: list[SurgeNote] = field(default_factory=list)  # surge before evict, one note per workload
    held: list[HeldPod] = field(default_factory=list)  # every blocked or failed eviction of the pass, with its reason
    draining_seen: int | None = None  # nodes draining at once, as the first wave counted them (None: not counted)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["active_tier"] = None if self.active_tier is None else int(self.active_tier)  # a plain number, as always
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DrainReport:
        d = dict(data)
        d["blocked"] = [BlockedPod(**b) for b in d.get("blocked", [])]
        for key in ("skipped", "refused", "failed", "held_by_policy"):
            d[key] = [PodReason(**r) for r in d.get(key, [])]
        d["forced"] = [ForcedPod(**f) for f in d.get("forced", [])]
        d["surge"] = [SurgeNote(**n) for n in d.get("surge", [])]
        d["held"] = [HeldPod(**h) for h in d.get("held", [])]
        tier = d.get("active_tier")
        d["active_tier"] = None if tier is None else Tier(tier)
        return cls(**d)

    def removing(self) -> set[str]:
        """The pods this report sent on their way (evicted, deleted) or still has to remove."""
        return {*self.evicted, *self.remaining, *(f.pod for f in self.forced)}

    def merged(self, later: DrainReport) -> DrainReport:
        """A copy of this report with ``later`` folded in (``absorb``)."""
        out = DrainReport.from_dict(self.to_dict())
        out.absorb(later)
        return out

    def absorb(self, later: DrainReport) -> None:
        """Fold a later pass into this cumulative report: actions add up, state comes from the later pass."""
        self.cordoned = self.cordoned or later.cordoned
        self.drained = later.drained
        self.evicted += [p for p in later.evicted if p not in self.evicted]
        self.forced += [f for f in later.forced if f.pod not in {x.pod for x in self.forced}]
        self.failed = later.failed
        self.blocked = later.blocked
        self.skipped = later.skipped
        self.refused = later.refused
        self.throttled = later.throttled
        self.terminating = later.terminating
        self.held_by_policy = later.held_by_policy
        self.remaining = later.remaining
        self.warnings += [w for w in later.warnings if w not in self.warnings]
        self.active_tier = later.active_tier
        self.api_calls += later.api_calls
        self.passes += later.passes
        self.grace_sent.update(later.grace_sent)
        self.retry_after = later.retry_after
        self.surge = merge_surge(self.surge, later.surge)
        self.held = later.held
        self.draining_seen = self.draining_seen if self.draining_seen is not None else later.draining_seen


def merge_surge(earlier: list[SurgeNote], later: list[SurgeNote]) -> list[SurgeNote]:
    """One note per workload, the latest word on it; the replica figures of the surge itself are kept."""
    out = {n.workload: n for n in earlier}
    for note in later:
        first = out.get(note.workload)
        if first is not None and first.replicas_before is not None:  # the surge's figures; a restore says its own
            out[note.workload] = replace(
                note,
                pods=note.pods or first.pods,
                detail=note.detail if note.status == first.status else f"{first.detail}; {note.status}: {note.detail}",
                via=first.via,
                replicas_before=first.replicas_before,
                replicas_after=first.replicas_after,
            )
        else:
            out[note.workload] = note
    return list(out.values())


HELD_LISTED = 10  # pods named in a summary (checkpointed with the execution's result: kept small)
MESSAGE_CHARS = 200


def held_reasons(report: DrainReport, limit: int = HELD_LISTED) -> list[dict[str, Any]]:
    """The report's holds as plain data, one entry per pod (the first ``limit``), messages clipped."""
    return [{**asdict(h), "message": h.message[:MESSAGE_CHARS]} for h in report.held[:limit]]


FORCED_REASON_CHARS = 300


def forced_reasons(report: DrainReport, limit: int = HELD_LISTED) -> list[dict[str, Any]]:
    """Why each pod deleted without an eviction was (the first ``limit``): what held it and what forced it, in the
    engine's words (the PodDisruptionBudgets by name and the apiserver's refusal, before the deadline or on an
    operator's decision; a finalizer; a grace past the deadline), clipped."""
    return [
        {"pod": f.pod, "grace_seconds": f.grace_seconds, "reason": f.reason[:FORCED_REASON_CHARS]}
        for f in report.forced[:limit]
    ]

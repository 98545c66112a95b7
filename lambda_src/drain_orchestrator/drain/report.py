"""DrainReport: what one drain pass (or a whole drain) did, JSON-serialisable for checkpoints.

A pass's report is checkpointed (the durable service refuses a checkpoint over 256 KB), and a node may hold hundreds
of pods, each refused with a message a webhook's author wrote: past CHECKPOINT_REPORT_BYTES, its per-pod lists keep
their first entries and count the rest (``summarized``, ``left_out``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from drain_orchestrator.drain.plan import Tier
from drain_orchestrator.drain.policy import Hold


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
    policy: str = ""  # held_by_policy: what holds it (drain/policy.py Hold: wait-for-completion, do-not-disrupt, …)


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
    # epoch: a drained node's pods as its verdict saw them, from a LIST sent then (or a watch as good as one): a pod
    # bound before then is in the verdict (None: not drained, or a report written before this was recorded)
    listed_at: float | None = None
    # per list (or ``grace_sent``, ``surge``): the entries a summary left out of a report too large to checkpoint whole
    left_out: dict[str, int] = field(default_factory=dict)

    def count(self, name: str) -> int:
        """How many entries the list ``name`` had, those a summary left out included."""
        return len(getattr(self, name)) + self.left_out.get(name, 0)

    def for_checkpoint(self) -> dict[str, Any]:
        """``to_dict``, summarized when it is larger than CHECKPOINT_REPORT_BYTES (fewer entries kept until it fits)."""
        d = self.to_dict()
        for keep in SUMMARY_ENTRIES:
            if len(json.dumps(d, separators=(",", ":"))) <= CHECKPOINT_REPORT_BYTES:
                break
            d = self.summarized(keep).to_dict()
        return d

    def summarized(self, keep: int) -> DrainReport:
        """A copy whose per-pod lists keep their first ``keep`` entries, messages and warnings clipped to
        MESSAGE_CHARS; what each list lost is counted in ``left_out``. Surge notes of a surge in place are all kept
        (the verdict takes them back by them), their pods lists cut."""
        out = DrainReport.from_dict(self.to_dict())
        left = dict(out.left_out)
        for name in PER_POD:
            items = getattr(out, name)
            if len(items) > keep:
                left[name] = left.get(name, 0) + len(items) - keep
                setattr(out, name, items[:keep])
        if len(out.grace_sent) > keep:
            left["grace_sent"] = left.get("grace_sent", 0) + len(out.grace_sent) - keep
            out.grace_sent = dict(list(out.grace_sent.items())[:keep])
        in_place = [n for n in out.surge if n.via is not None]
        others = [n for n in out.surge if n.via is None]
        if len(others) > keep:
            left["surge"] = left.get("surge", 0) + len(others) - keep
        out.surge = [replace(n, detail=n.detail[:MESSAGE_CHARS], pods=n.pods[:3]) for n in in_place + others[:keep]]
        out.blocked = [replace(b, message=b.message[:MESSAGE_CHARS]) for b in out.blocked]
        out.held = [replace(h, message=h.message[:MESSAGE_CHARS]) for h in out.held]
        out.failed = [replace(f, reason=f.reason[:MESSAGE_CHARS]) for f in out.failed]
        out.warnings = [w[:MESSAGE_CHARS] for w in out.warnings]
        out.left_out = left
        return out

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
        self.listed_at = later.listed_at
        added = ("evicted", "forced", "warnings", "grace_sent", "surge")  # lists that add up across passes
        left = {k: v for k, v in self.left_out.items() if k in added}
        for name, n in later.left_out.items():
            left[name] = left.get(name, 0) + n if name in added else n
        self.left_out = left


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
# a pass's report checkpointed larger than this is summarized (pacing.CHECKPOINT_BYTES_PER_OPERATION, the model's
# largest checkpoint of one operation, counts on it); fewer entries are kept until it fits
CHECKPOINT_REPORT_BYTES = 32 * 1024
SUMMARY_ENTRIES = (50, 20, 5, 1)
PER_POD = (
    "evicted",
    "blocked",
    "skipped",
    "refused",
    "forced",
    "failed",
    "throttled",
    "terminating",
    "held_by_policy",
    "remaining",
    "warnings",
    "held",
)


def held_reasons(report: DrainReport, limit: int = HELD_LISTED) -> list[dict[str, Any]]:
    """The report's holds as plain data, one entry per pod (the first ``limit``), messages clipped: refused or failed
    evictions, then pods their drain policy holds (``reason`` the policy, ``message`` why, no status)."""
    holds = [{**asdict(h), "message": h.message[:MESSAGE_CHARS]} for h in report.held[:limit]]
    for p in report.held_by_policy[: max(0, limit - len(holds))]:
        reason = p.policy or Hold.WAIT_FOR_COMPLETION.value  # a report checkpointed before holds were typed
        holds.append({"pod": p.pod, "reason": reason, "message": p.reason[:MESSAGE_CHARS], "pdbs": [], "status": None})
    return holds


FORCED_REASON_CHARS = 300


def forced_reasons(report: DrainReport, limit: int = HELD_LISTED) -> list[dict[str, Any]]:
    """Why each pod deleted without an eviction was (the first ``limit``): what held it and what forced it, in the
    engine's words (the PodDisruptionBudgets by name and the apiserver's refusal, before the deadline or on an
    operator's decision; a finalizer; a grace past the deadline), clipped."""
    return [
        {"pod": f.pod, "grace_seconds": f.grace_seconds, "reason": f.reason[:FORCED_REASON_CHARS]}
        for f in report.forced[:limit]
    ]

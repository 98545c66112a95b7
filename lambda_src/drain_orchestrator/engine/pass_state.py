"""What a drain remembers between passes, and when it tries again: which refused pods are due, and how long to
wait between passes (a terminating pod's grace, a retry time, or a PDB's budget rising, watched).

A pod refused by a named PDB is retried only when a LIST shows that budget allowing, and no more of them than it
allows (drain/plan.py budget_share): under a termination storm, many drains wait on the same budgets, and a rise
must not cost one refused eviction per waiting pod.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import backoff_delay, budget_share, contention_jitter, force_delete_due, next_poll
from drain_orchestrator.drain.policy import Owner, OwnerKey, PodPolicy, release_time
from drain_orchestrator.drain.report import HeldPod
from drain_orchestrator.drain.surge import SurgeFacts
from drain_orchestrator.kube.evict import Outcome
from drain_orchestrator.kube.pdb_watch import list_allowing, wait_for_budget
from drain_orchestrator.kube.rest import Kube


@dataclass
class DrainState:
    """What one drain remembers between passes. Optional: a fresh state simply retries everything."""

    cordoned: bool = False
    attempts: dict[str, int] = field(default_factory=dict)  # "ns/name@uid" → refusals so far
    not_before: dict[str, float] = field(default_factory=dict)  # monotonic time of the next try
    pdbs_of: dict[str, list[str]] = field(default_factory=dict)
    last_block: dict[str, str] = field(default_factory=dict)
    sent: dict[str, str] = field(default_factory=dict)  # pods we evicted/deleted: key → uid
    deletion_times: list[float] = field(default_factory=list)  # epoch deletionTimestamps still pending
    # pods refused by named PDBs → those PDBs: retried only when a PDB LIST shows the budget allows them
    waiting_on: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    contention: int = 0  # budget-admitted retries refused in a row (other drains took the disruption first)
    budget_not_before: float = 0.0  # monotonic: no budget-admitted retry before this (drawn at the last refusal)
    force_at: dict[str, float] = field(default_factory=dict)  # monotonic time the deadline policy acts
    expected_gone: dict[str, float] = field(default_factory=dict)  # sent pods: epoch when their grace ends
    surge: SurgeFacts = field(default_factory=SurgeFacts)  # surge before evict (engine/surge.py)
    last_hold: dict[str, HeldPod] = field(default_factory=dict)  # refused or failed pods: the last reason
    # drain policies (drain/policy.py): controllers looked up once per drain, held pods' release (monotonic)
    owners: dict[OwnerKey, Owner] = field(default_factory=dict)
    held_until: dict[str, float] = field(default_factory=dict)
    noted: set[str] = field(default_factory=set)  # warnings already printed
    cordoned_at: float | None = None  # epoch; a drained pass only counts once it listed settle_seconds after it
    listed_at: float | None = None  # epoch of the last pass's LIST
    seen: set[str] = field(default_factory=set)  # pods listed so far (pods bound after the cordon are named)
    redeleted: set[str] = field(default_factory=set)  # stuck terminating pods deleted again near the deadline


def ident_of(p: PodInfo) -> str:
    return f"{p.key}@{p.uid}"


def due(
    kube: Kube, batch: list[PodVerdict], options: DrainOptions, state: DrainState
) -> tuple[list[PodVerdict], set[str]]:
    """The pods to try now, and which of them a PDB's budget admitted.

    A pod refused by a named PDB is retried only when a LIST shows that PDB allowing disruptions, and no more
    of them than it allows (budget_share); other retries wait for their backoff. The deadline policy may act
    on any pod."""
    mono, now = time.monotonic(), time.time()
    bound = [v for v in batch if ident_of(v.pod) in state.waiting_on]
    allowing = list_allowing(kube, {v.pod.namespace for v in bound}) if bound else {}
    share = set(budget_share([(ident_of(v.pod), state.waiting_on[ident_of(v.pod)]) for v in bound], allowing))
    if mono < state.budget_not_before:
        # lost a race lately: a budget that looks open may already be taken by evictions still in flight (the
        # apiserver holds concurrent evictions of one PDB for seconds), so keep out until the backoff has passed
        share = set()

    def ready(v: PodVerdict) -> bool:
        ident = ident_of(v.pod)
        if ident in share:
            return True
        if ident not in state.waiting_on and state.not_before.get(ident, 0.0) <= mono:
            return True
        return options.force_delete_on_deadline and (
            options.force_now
            or force_delete_due(v.pod.termination_grace_period, now, options.deadline, options.deadline_margin)
        )

    return [v for v in batch if ready(v)], share


def note_contention(state: DrainState, outcomes: list[Outcome], options: DrainOptions) -> None:
    """Budget-admitted retries that were refused mean other drains took the disruption first: back off more."""
    if Outcome.BLOCKED in outcomes:
        state.contention += 1
        pause = contention_jitter(state.contention, options.budget_jitter_slot, options.budget_jitter_cap)
        state.budget_not_before = time.monotonic() + pause
    elif Outcome.EVICTED in outcomes:
        state.contention = max(0, state.contention - 1)


def note_held(
    state: DrainState, verdicts: list[PodVerdict], policies: dict[str, PodPolicy], options: DrainOptions, now: float
) -> None:
    """When each pod held by its drain policy is looked at again (the deadline policy, a do-not-disrupt duration);
    a held pod that finishes is seen by the pass after the next node check."""
    mono = time.monotonic()
    state.held_until = {
        ident_of(v.pod): mono + max(0.0, release_time(v, policies, options.deadline, options.deadline_margin) - now)
        for v in verdicts
        if v.verdict is Verdict.HOLD
    }


def retry_later(state: DrainState, ident: str, options: DrainOptions, after: float | None = None) -> float:
    """Schedule the pod's next eviction attempt: ``after`` seconds when the server said so, else exponential
    backoff with full jitter; returns the delay."""
    attempt = state.attempts.get(ident, 0)
    delay = after or backoff_delay(attempt, options.retry_base, options.retry_cap)
    state.attempts[ident] = attempt + 1
    state.not_before[ident] = time.monotonic() + delay
    return delay


def forget(state: DrainState, ident: str) -> None:
    for d in (
        state.attempts,
        state.not_before,
        state.pdbs_of,
        state.last_block,
        state.force_at,
        state.waiting_on,
        state.last_hold,
    ):
        d.pop(ident, None)


def wait_between_passes(kube: Kube, state: DrainState, options: DrainOptions, interval: float, end: float) -> None:
    """Sleep until the next pass is worth it: a terminating pod's grace runs out, a retry is due, or a
    blocking PDB allows a disruption again (watched, so the retry is not a fixed sleep)."""
    mono, now = time.monotonic(), time.time()
    timed = [t for ident, t in state.not_before.items() if ident not in state.waiting_on]
    retry_at = min([*timed, *state.force_at.values(), *state.held_until.values()], default=float("inf"))
    # never longer than a node check: a node deleted during a PDB wait is noticed by the next pass
    budget = max(0.0, min(end, retry_at, mono + options.node_check_seconds) - mono)
    overdue = [k for k, t in state.expected_gone.items() if t <= now]
    if overdue:
        # pods whose grace has run out (0 s: deleted at once): look again right away, once per pod
        for k in overdue:
            del state.expected_gone[k]
        time.sleep(min(0.02, budget) if budget > 0 else 0.0)
        return
    if state.deletion_times or state.sent:
        times = [*state.deletion_times, *state.expected_gone.values()]
        delay = next_poll(now, times, interval, options.poll_min, options.poll_max)
        time.sleep(min(delay, budget) if budget > 0 else options.poll_min)
        return
    pdbs = {p for keys in state.waiting_on.values() for p in keys}
    if pdbs and budget > 0:
        if state.budget_not_before > mono:  # backing off after a lost race: no retry before then anyway
            time.sleep(min(state.budget_not_before - mono, budget))
            return
        if wait_for_budget(kube, pdbs, budget):
            pause = contention_jitter(state.contention, options.budget_jitter_slot, options.budget_jitter_cap)
            time.sleep(min(pause, max(0.0, end - time.monotonic())))
        return
    if state.held_until and budget > 0:
        time.sleep(budget)  # only pods let finish: look every node check (or at a release), not every second
        return
    time.sleep(min(budget, options.poll_max) if budget > 0 else options.poll_min)

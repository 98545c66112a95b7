"""What a drain remembers between passes, and when it tries again: which refused pods are due, and how long to
wait between passes (a terminating pod's grace, a retry time, or a PDB's budget rising, watched).

A pod refused by a named PDB is retried only when the watch of that budget saw it allowing, and still allowing
after a hold-off drawn at its rise, and no more of them than it allows (drain/plan.py budget_share): under a
termination storm many drains wait on the same budgets, and a rise must not cost one refused eviction per drain.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from drain_orchestrator.drain.classify import PodVerdict, Verdict
from drain_orchestrator.drain.first_wave import contention_of
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import (
    backoff_delay,
    budget_share,
    contention_jitter,
    force_delete_due,
    next_poll,
    turn_hold_off,
    turns_per_slot,
)
from drain_orchestrator.drain.policy import Owner, OwnerKey, PodPolicy, release_time
from drain_orchestrator.drain.surge import SurgeFacts
from drain_orchestrator.drain.turn_lag import TurnLag
from drain_orchestrator.engine.pod_record import PodRecord, ident_of
from drain_orchestrator.kube.evict import Outcome
from drain_orchestrator.kube.node_watch import NodePresence
from drain_orchestrator.kube.pdb_watch import Budgets, wait_for_budget
from drain_orchestrator.kube.pods import NodePods, PodsWatched, SeenIps, wait_for_deletions
from drain_orchestrator.kube.rest import Kube

Budget = tuple[str, str]  # (namespace, PodDisruptionBudget name)
# a wait on budgets hands what it watched to the pass right after it (no LIST of its own)
BUDGETS_FRESH_SECONDS = 2.0
# a pass right after a budget's turn evicts from the last LIST when it is younger than this (the evictions' UID
# preconditions make a stale pod harmless: gone answers 404, replaced 409); a node is only called drained from a
# LIST of its own
TURN_LISTING_SECONDS = 10.0
# widest window a budget's turns are drawn in, one slot for each drain still wanting it (to the power of two above):
# 50 drains at 0.3 s slots need 19 s; capped at budget_jitter_cap (10 s) they were drawn 0.16 s apart, under two
# lags, and a storm of 50 nodes had twice the refusals of one of 20 (docs/benchmarks.md). A drain that counts more
# drains than are left waits longer for its turn (half the window on average), and draws it again at every rise.
TURN_WINDOW_MAX_SECONDS = 30.0
# longest wait on budgets without a pass (the node is still checked every node_check_seconds meanwhile): a pod
# deleted by someone else, or bound to the node, while its budget stays shut is seen within this time
BUDGET_WAIT_SECONDS = 30.0


@dataclass
class DrainState:
    """What one drain remembers between passes. Optional: a fresh state simply retries everything."""

    pods: dict[str, PodRecord] = field(default_factory=dict)  # ident_of(pod) → what the drain knows of it
    cordoned: bool = False
    deletion_times: list[float] = field(default_factory=list)  # epoch deletionTimestamps still pending
    contention: int = 0  # budget-admitted retries refused in a row (other drains took the disruption first)
    # the first wave's estimate of the drains sharing its budgets (engine/first_wave.py): spreads its turns, one
    # step less with each budget-admitted eviction that goes through (cleared at once, the storm's tail was shorter
    # but its refusals three times as many: docs/benchmarks.md)
    first_wave_contention: int = 0
    # per budget of the first wave's turns: the drains that may want it (draining nodes, at most its pods), less the
    # disruptions it gave since, as the budget's watch saw them fall; the turns' spread follows what is left of each
    turn_contenders: dict[Budget, int] = field(default_factory=dict)
    # counts the draining nodes again once, at a rise of one of those budgets a moment later (engine/first_wave.py)
    turn_recount: Callable[[], None] | None = None
    budget_falls: dict[Budget, int] = field(default_factory=dict)
    draining_seen: int | None = None  # nodes draining at once at the first wave (this one included)
    budget_not_before: float = 0.0  # monotonic: no budget-admitted retry before this (drawn at the last refusal)
    turn_lag: TurnLag = field(default_factory=TurnLag)  # how late a budget's fall reaches this drain: the turns' slot
    surge: SurgeFacts = field(default_factory=SurgeFacts)  # surge before evict (engine/surge.py)
    # drain policies (drain/policy.py): controllers looked up once per drain
    owners: dict[OwnerKey, Owner] = field(default_factory=dict)
    noted: set[str] = field(default_factory=set)  # warnings already printed
    cordoned_at: float | None = None  # epoch; a drained pass only counts once it listed settle_seconds after it
    listed_at: float | None = None  # epoch of the last pass's LIST
    node_seen: float | None = None  # monotonic: the node was last read (cordon or existence check)
    presence: NodePresence | None = None  # is the node still there: a GET, then a watch while the drain waits
    budgets: Budgets | None = None  # the budgets as the last wait on them saw them (kube/pdb_watch.py)
    budget_watch: Budgets | None = None  # where the next wait on budgets resumes its watch (no LIST)
    pods_rv: str | None = None  # resourceVersion of the last pass's LIST: pods going are watched from there
    leaving: set[str] = field(default_factory=set)  # uids of the pods terminating at the last pass
    pods_watchable: bool = True  # False once a watch of pods was refused (a role without watch pods)
    seen: set[str] = field(default_factory=set)  # pods listed so far (pods bound after the cordon are named)
    redeleted: set[str] = field(default_factory=set)  # stuck terminating pods deleted again near the deadline
    first_wave_read: bool = False  # the first wave's budgets were looked at (engine/first_wave.py)
    budget_rose_at: float | None = None  # monotonic: a budget waited on last rose (others take turns; ours comes)
    listing: NodePods | None = None  # the last pass's LIST of the node's pods (at listed_at)
    only_going: bool = False  # every pod the last pass left is on its way out: nothing to retry, hold or wait on
    seen_ips: SeenIps | None = None  # the caller's record of the pod IPs each LIST found (None: not wanted)
    # uids the last wait watched go with no pod arriving, and when (epoch): the node as a LIST then would show it
    watched_gone: set[str] = field(default_factory=set)
    watched_at: float | None = None

    def record(self, ident: str) -> PodRecord:
        """The pod's record to write to, made on first use."""
        rec = self.pods.get(ident)
        if rec is None:
            rec = self.pods[ident] = PodRecord(ident)
        return rec

    def known(self, ident: str) -> PodRecord:
        """The pod's record to read: a blank one, not kept, for a pod the drain knows nothing about."""
        return self.pods.get(ident) or PodRecord(ident)

    def tidy(self, ident: str) -> None:
        """Drop the pod's record once nothing is left in it."""
        rec = self.pods.get(ident)
        if rec is not None and rec.blank:
            del self.pods[ident]

    @property
    def going(self) -> bool:
        """Some pod is on its way out (sent by this drain, or its grace shortened)."""
        return any(r.going for r in self.pods.values())


def due(
    batch: list[PodVerdict], options: DrainOptions, state: DrainState
) -> tuple[list[PodVerdict], dict[str, list[Budget]]]:
    """The pods to try now, and which of them a PDB's budget admitted (with those budgets).

    A pod refused by a named PDB is retried only right after a wait saw that PDB allowing disruptions (and still
    allowing after its hold-off), and no more of them than it allows (budget_share); other retries wait for their
    backoff. The deadline policy may act on any pod."""
    mono, now = time.monotonic(), time.time()
    bound = [(ident_of(v.pod), v) for v in batch if state.known(ident_of(v.pod)).waiting_on]
    allowing = _allowing(state, mono) if bound else {}
    share = {
        i: list(state.pods[i].waiting_on)
        for i in budget_share([(i, state.pods[i].waiting_on) for i, _ in bound], allowing)
    }
    if mono < state.budget_not_before:
        # lost a race lately: a budget that looks open may already be taken by evictions still in flight (the
        # apiserver holds concurrent evictions of one PDB for seconds), so keep out until the backoff has passed
        share = {}

    def ready(v: PodVerdict) -> bool:
        ident = ident_of(v.pod)
        if ident in share:
            return True
        rec = state.known(ident)
        if not rec.waiting_on and (rec.not_before or 0.0) <= mono:
            return True
        return options.force_delete_on_deadline and (
            options.force_now
            or force_delete_due(v.pod.termination_grace_period, now, options.deadline, options.deadline_margin)
        )

    return [v for v in batch if ready(v)], share


def turn_listing(state: DrainState) -> NodePods | None:
    """The last LIST, for a pass that follows a wait whose news is a budget's turn (the budget-bound pods it admits
    are known from that LIST), unless it is older than TURN_LISTING_SECONDS; None: list again."""
    seen, listing = state.budgets, state.listing
    if seen is None or listing is None or state.listed_at is None:
        return None
    if time.monotonic() - seen.at > BUDGETS_FRESH_SECONDS or not any(n > 0 for n in seen.allowed.values()):
        return None
    return listing if time.time() - state.listed_at <= TURN_LISTING_SECONDS else None


def _allowing(state: DrainState, mono: float) -> dict[Budget, int]:
    """What the budgets allow as the wait that just ended watched them (its hold-off over, they still allowed).
    A pass that did not follow such a wait (a pod went, a timer ran out) retries no budget-bound pod: it would
    race every other drain waiting on the budget, where the wait takes the budget's rises in turn."""
    seen = state.budgets
    state.budgets = None  # used once: the evictions it admits change it
    if seen is None or mono - seen.at > BUDGETS_FRESH_SECONDS:
        return {}
    return {k: n for k, n in seen.allowed.items() if n > 0}


def note_contention(
    state: DrainState, admitted: list[tuple[Outcome, list[Budget]]], options: DrainOptions, sent_at: float
) -> None:
    """The budget-admitted evictions of a pass, each with its budgets, sent at ``sent_at`` (monotonic). One that was
    refused means other drains took the disruption first: back off more. One that went through is timed until the
    budget's watch shows its fall (the turns' slot, drain/turn_lag.py)."""
    outcomes = [outcome for outcome, _ in admitted]
    for outcome, budgets in admitted:
        if outcome is Outcome.EVICTED:
            for key in budgets:
                state.turn_lag.sent(key, sent_at)
    if Outcome.EVICTED in outcomes:
        state.first_wave_contention = max(0, state.first_wave_contention - 1)
    if Outcome.BLOCKED in outcomes:
        state.contention += 1
        pause = contention_jitter(state.contention, turn_slot(state, options), options.budget_jitter_cap)
        state.budget_not_before = time.monotonic() + pause
    elif Outcome.EVICTED in outcomes:
        state.contention = max(0, state.contention - 1)


def turn_slot(state: DrainState, options: DrainOptions) -> float:
    """The slot the turns at a budget are drawn in: from the lag this drain measured, else the configured one."""
    return state.turn_lag.slot(options.budget_jitter_slot, options.budget_jitter_cap)


def note_held(
    state: DrainState, verdicts: list[PodVerdict], policies: dict[str, PodPolicy], options: DrainOptions, now: float
) -> None:
    """When each pod held by its drain policy is looked at again (the deadline policy, a do-not-disrupt duration);
    a held pod that finishes is seen by the pass after the next node check."""
    mono = time.monotonic()
    for ident, rec in list(state.pods.items()):
        rec.held_until = None
        state.tidy(ident)
    for v in verdicts:
        if v.verdict is Verdict.HOLD:
            release = release_time(v, policies, options.deadline, options.deadline_margin)
            state.record(ident_of(v.pod)).held_until = mono + max(0.0, release - now)


def retry_later(state: DrainState, ident: str, options: DrainOptions, after: float | None = None) -> float:
    """Schedule the pod's next eviction attempt: ``after`` seconds when the server said so, else exponential
    backoff with full jitter; returns the delay."""
    rec = state.record(ident)
    delay = after or backoff_delay(rec.attempts, options.retry_base, options.retry_cap)
    rec.attempts += 1
    rec.not_before = time.monotonic() + delay
    return delay


def forget(state: DrainState, ident: str) -> None:
    """Drop what the pod's refusals left (it was evicted, deleted or is gone); what was sent to it stays."""
    rec = state.pods.get(ident)
    if rec is not None:
        rec.forget_refusals()
        state.tidy(ident)


def wait_between_passes(
    kube: Kube,
    state: DrainState,
    options: DrainOptions,
    interval: float,
    end: float,
    check: Callable[[], None] | None = None,
    node: str | None = None,
) -> None:
    """Sleep until the next pass is worth it: a blocking PDB allows a disruption again, the pods on their way out
    are gone, a retry is due (both watched, so no fixed sleep and no polling). ``check`` (the node still there?)
    lets a wait on budgets last up to BUDGET_WAIT_SECONDS, checking meanwhile; ``node`` lets the wait for pods to
    go be a watch of the node's pods instead of LISTs."""
    mono, now = time.monotonic(), time.time()
    recs = list(state.pods.values())
    acts = [t for r in recs for t in (r.timed, r.force_at, r.held_until) if t is not None]
    retry_at = min(acts, default=float("inf"))
    # never longer than a node check: a node deleted during a PDB wait is noticed by the next pass
    budget = max(0.0, min(end, retry_at, mono + options.node_check_seconds) - mono)
    pdbs = {p for r in recs for p in r.waiting_on}
    going = state.deletion_times or any(r.sent for r in recs)
    if pdbs and check is not None:
        # budgets first, pods going or not: a rise is taken in turn only by a drain watching it (pods that go
        # meanwhile are seen by the pass after; the node cannot be drained before its budget-bound pods anyway)
        wait = max(0.0, min(end, retry_at, mono + BUDGET_WAIT_SECONDS) - mono)
        if wait > 0:
            _wait_for_budgets(kube, state, options, pdbs, wait, check, max(0.0, end - mono))
            return
    if going and node is not None and check is not None and state.pods_rv and state.pods_watchable:
        wait = max(0.0, min(end, retry_at) - mono)
        uids = state.leaving | _sent_uids(recs)
        gone = wait_for_deletions(
            kube,
            node,
            state.pods_rv,
            uids,
            wait,
            check=check,
            check_every=budget,
            quiet_until=_settle_point(state, options, mono, now),
        )
        if gone is PodsWatched.FORBIDDEN:  # the role cannot watch pods (not upgraded yet): poll as before
            state.pods_watchable = False
        else:
            if gone is PodsWatched.GONE:
                state.watched_gone, state.watched_at = uids, time.time()
            for r in recs:
                r.expected_gone = None
                state.tidy(r.ident)
            return
    overdue = [r for r in recs if r.expected_gone is not None and r.expected_gone <= now]
    if overdue:
        # pods whose grace has run out (0 s: deleted at once): look again right away, once per pod
        for r in overdue:
            r.expected_gone = None
            state.tidy(r.ident)
        time.sleep(min(0.02, budget) if budget > 0 else 0.0)
        return
    if going:
        times = [*state.deletion_times, *(r.expected_gone for r in recs if r.expected_gone is not None)]
        delay = next_poll(now, times, interval, options.poll_min, options.poll_max)
        time.sleep(min(delay, budget) if budget > 0 else options.poll_min)
        return
    if pdbs and budget > 0:
        _wait_for_budgets(kube, state, options, pdbs, budget, check, max(0.0, end - mono))
        return
    if any(r.held_until is not None for r in recs) and budget > 0:
        time.sleep(budget)  # only pods let finish: look every node check (or at a release), not every second
        return
    time.sleep(min(budget, options.poll_max) if budget > 0 else options.poll_min)


def _wait_for_budgets(
    kube: Kube,
    state: DrainState,
    options: DrainOptions,
    pdbs: set[Budget],
    wait: float,
    check: Callable[[], None] | None,
    keep_open: float,
) -> None:
    """Wait on the budgets; the watch stays open for the rest of the pass (``keep_open`` seconds), so the next wait
    reads on from it without a request (``close_watches`` when the drain ends)."""

    def hold_off(key: Budget, allowed: int) -> float:
        # drawn at each rise: after a lost race, not before its backoff; else a window that widens with the
        # races lost in a row (at least the first slot: a drain waiting here was refused once already, at most
        # budget_jitter_cap) and, for a budget of the first wave's turns, one slot for as many drains still wanting it
        # as a slot holds at what it allows (turns_per_slot, once this drain measured its lag; at most
        # TURN_WINDOW_MAX_SECONDS)
        backoff = state.budget_not_before - time.monotonic()
        slot, cap = turn_slot(state, options), options.budget_jitter_cap
        if key in state.turn_contenders and state.turn_recount is not None:
            state.turn_recount()
        wanting = state.first_wave_contention
        if key in state.turn_contenders:
            left = max(1, state.turn_contenders[key] - state.budget_falls.get(key, 0))
            wanting = contention_of(left, turns_per_slot(allowed, measured=state.turn_lag.lag is not None))
        return max(backoff, turn_hold_off(state.contention, wanting, slot, cap, TURN_WINDOW_MAX_SECONDS))

    every, resume = options.node_check_seconds, state.budget_watch
    ended = wait_for_budget(
        kube,
        pdbs,
        wait,
        hold_off=hold_off,
        check=check,
        check_every=every,
        resume=resume,
        keep_open=keep_open,
        falls=state.budget_falls,
        lag=state.turn_lag,
    )
    state.budgets, state.budget_watch = ended, ended
    if ended.rose_at is not None:
        state.budget_rose_at = ended.rose_at


def close_watches(state: DrainState) -> None:
    """End the watches waits left open for the next ones (budgets, the node): the drain is over, or the pass."""
    if state.budget_watch is not None:
        state.budget_watch.close()
    if state.presence is not None:
        state.presence.close()


def _settle_point(state: DrainState, options: DrainOptions, mono: float, now: float) -> float | None:
    """When only pods on their way out are left, the watch goes on until ``settle_seconds`` after the cordon
    (monotonic), so that the pass after it lists late enough and is the last."""
    if not state.only_going or state.cordoned_at is None:
        return None
    left = state.cordoned_at + options.settle_seconds - now
    return mono + left if left > 0 else None


def _sent_uids(recs: list[PodRecord]) -> set[str]:
    return {r.uid for r in recs if r.sent and r.uid}

"""Drain a node: idempotent passes (``drain_pass``) and a loop of them until drained (``drain_node``).

A pass cordons (once), lists the node's pods, classifies them (kubectl semantics), evicts the active tier
concurrently, and returns a DrainReport; it never waits for pods to go. Passes converge: a pod already
terminating is only waited on, a pod that is gone or replaced (404/409) counts as done, so repeating a
pass — or running two drains of one node at once — does no harm.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict, refusal_errors
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import (
    active_tier,
    force_delete_at,
    force_delete_due,
    grace_for,
    to_evict_now,
)
from drain_orchestrator.drain.report import BlockedPod, DrainReport, ForcedPod, PodReason
from drain_orchestrator.engine.edges import (
    drained_as_watched,
    name_late_pods,
    note_problems,
    redelete_stuck,
    settle_wait,
    shorten_past_deadline,
)
from drain_orchestrator.engine.first_wave import hold_first_wave
from drain_orchestrator.engine.held import budgets_selecting, park_until_deadline_policy, record_hold, report_waiting
from drain_orchestrator.engine.held_pass import HoldCheck
from drain_orchestrator.engine.pass_state import (
    DrainState,
    close_watches,
    due,
    forget,
    note_contention,
    note_held,
    retry_later,
    turn_listing,
    wait_between_passes,
)
from drain_orchestrator.engine.pod_record import ident_of
from drain_orchestrator.engine.surge import record_seen, surge_pass
from drain_orchestrator.engine.verdicts import classify_node
from drain_orchestrator.kube.cordon import cordon
from drain_orchestrator.kube.evict import EvictionResult, HoldReason, Outcome, delete_pod, evict_pod
from drain_orchestrator.kube.node_watch import NodePresence
from drain_orchestrator.kube.pods import SeenIps, list_node_pods_at
from drain_orchestrator.kube.rest import Kube

__all__ = ["DrainState", "drain_node", "drain_pass"]

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def drain_pass(
    kube: Kube | Any,
    node: str,
    options: DrainOptions,
    *,
    state: DrainState | None = None,
    progress: Progress | None = None,
) -> DrainReport:
    """Do every drain action currently possible on ``node`` and report; never waits for pods to go."""
    say = progress or _quiet
    kube = kube if isinstance(kube, Kube) else Kube(kube, pool_size=options.concurrency)
    state = state if state is not None else DrainState()
    started, calls0 = time.monotonic(), kube.calls
    report = DrainReport(node=node, dry_run=options.dry_run)

    if not state.cordoned:
        result = cordon(
            kube,
            node,
            reason=options.reason,
            event_id=options.event_id,
            deadline=options.deadline,
            taint=options.drain_taint,
            exclude_from_load_balancers=options.exclude_from_load_balancers,
            now=time.time(),
            dry_run=options.dry_run,
        )
        say(f"node/{node} cordoned" if result.changed else f"node/{node} already cordoned")
        state.cordoned = True
        state.cordoned_at = result.cordoned_at if result.cordoned_at is not None else time.time()
        state.node_seen = time.monotonic()
        record_seen(state.surge, result.annotations)  # the surge record as the cordon read it
    else:
        _check_node_exists(kube, node, state, options)
    report.cordoned = True

    # a LIST of its own (a listing of another caller's, or a drain before, may miss a pod bound since), except right
    # after a budget's turn: its own LIST of a moment ago names the pods the turn admits
    turn = turn_listing(state)
    listed = turn if turn is not None else list_node_pods_at(kube, node, options.pod_selector)
    if turn is None:
        state.listing, state.listed_at = listed, time.time()
        if state.seen_ips is not None:
            state.seen_ips.note(listed.items)
    state.pods_rv = listed.resource_version
    pods = [PodInfo.from_dict(p) for p in listed.items]
    _announce_gone(state, pods, say)
    state.seen.update(p.key for p in pods)
    now = time.time()
    found = classify_node(kube, pods, options, state.owners, now)
    verdicts = found.verdicts
    _record_verdicts(report, verdicts, say)
    note_problems(report, state, found.problems, say)
    note_held(state, verdicts, found.policies, options, now)

    candidates = [] if report.refused else to_evict_now(verdicts)
    if turn is not None:  # sent since that LIST: on their way out, not to be sent again
        candidates = [v for v in candidates if not state.known(ident_of(v.pod)).sent]
    hold_first_wave(kube, state, candidates, options, say)  # in a storm: budget-bound pods go at their turn
    batch, by_budget = due(candidates, options, state)
    sent_at = time.monotonic()
    results = _evict_all(kube, batch, options, say)
    for v, res in zip(batch, results, strict=True):
        _apply_outcome(kube, report, state=state, v=v, res=res, options=options, say=say)
    admitted = [
        (r.outcome, by_budget[i]) for v, r in zip(batch, results, strict=True) if (i := ident_of(v.pod)) in by_budget
    ]
    note_contention(state, admitted, options, sent_at)
    for v in candidates:  # waiting for their retry time: still blocked, as last reported
        ident, rec = ident_of(v.pod), state.known(ident_of(v.pod))
        if v not in batch and rec.last_block is not None:
            report.blocked.append(BlockedPod(v.pod.key, rec.pdbs, rec.last_block))
        if v not in batch:
            report_waiting(report, state, ident)
    if options.surge != "never" and not options.dry_run and not report.refused and turn is None:
        surge_pass(kube, node, report, verdicts, state.surge, options, state.owners)  # replacements first

    if options.force_delete_on_deadline and not report.refused:
        shorten_past_deadline(kube, report, state, verdicts, options, say)
    redelete_stuck(kube, report, state, verdicts, options, say)
    leaving = [v.pod for v in verdicts if v.verdict is Verdict.WAIT and v.pod.deletion_timestamp is not None]
    state.deletion_times = [p.deletion_timestamp for p in leaving if p.deletion_timestamp is not None]
    state.leaving = {p.uid for p in leaving if p.uid}
    report.active_tier = active_tier(verdicts)
    report.remaining = [v.pod.key for v in verdicts if v.verdict in (Verdict.EVICT, Verdict.WAIT, Verdict.HOLD)]
    report.drained = not report.remaining and not report.refused and turn is None
    state.only_going = _only_going(report)
    report.api_calls = kube.calls - calls0
    report.draining_seen = state.draining_seen
    report.elapsed = time.monotonic() - started
    return report


def _only_going(report: DrainReport) -> bool:
    going = {*report.evicted, *report.terminating, *(f.pod for f in report.forced)}
    stuck = report.blocked or report.throttled or report.failed or report.held_by_policy or report.refused
    return bool(report.remaining) and not stuck and set(report.remaining) <= going


def _check_node_exists(
    kube: Kube, node: str, state: DrainState, options: DrainOptions, *, waiting: bool = False
) -> None:
    """At most every ``node_check_seconds`` a look: a Node deleted mid-drain (instance terminated) ends the drain
    within that time, and passes that follow each other sooner (pods going) do not each read the node. A look
    during a wait watches the node from then on, so the looks after it send nothing (kube/node_watch.py)."""
    presence = state.presence = state.presence or NodePresence(kube, node)
    mono = time.monotonic()
    if not presence.watching and state.node_seen is not None and mono - state.node_seen < options.node_check_seconds:
        return
    state.node_seen = mono
    presence.check(waiting=waiting)  # NodeGone when it is gone; a view of a moment ago (the cordon's answer) will do


def _announce_gone(state: DrainState, pods: list[PodInfo], say: Progress) -> None:
    present = {ident_of(p) for p in pods}
    for ident, rec in list(state.pods.items()):
        if rec.sent and ident not in present:  # 404 or a new pod under the same name: ours is gone
            say(f"pod/{rec.key.split('/', 1)[1]} evicted")
            rec.sent, rec.expected_gone = False, None
            state.tidy(ident)


def _record_verdicts(report: DrainReport, verdicts: list[PodVerdict], say: Progress) -> None:
    warnings: dict[str, list[str]] = {}
    for v in verdicts:
        if v.warning:
            warnings.setdefault(v.warning, []).append(v.pod.key)
        if v.verdict is Verdict.SKIP:
            report.skipped.append(PodReason(v.pod.key, v.reason))
        elif v.verdict is Verdict.REFUSE:
            report.refused.append(PodReason(v.pod.key, v.reason))
        elif v.verdict is Verdict.WAIT:
            report.terminating.append(v.pod.key)
        elif v.verdict is Verdict.HOLD:
            report.held_by_policy.append(PodReason(v.pod.key, v.reason))
    for msg, keys in warnings.items():
        line = f"Warning: {msg}: {', '.join(keys)}"
        report.warnings.append(line)
        say(line)
    for err in refusal_errors(verdicts):
        say(f"error: {err}")


def _evict_all(kube: Kube, batch: list[PodVerdict], options: DrainOptions, say: Progress) -> list[EvictionResult]:
    def one(v: PodVerdict) -> EvictionResult:
        grace = grace_for(
            v.pod.termination_grace_period,
            options.grace_period,
            time.time(),
            options.deadline,
            options.deadline_margin,
        )
        res = evict_pod(kube, v.pod.namespace, v.pod.name, v.pod.uid, grace=grace, dry_run=options.dry_run)
        return replace(res, grace=grace)

    for v in batch:
        say(f"evicting pod {v.pod.key}" + (" (server dry run)" if options.dry_run else ""))
    if len(batch) <= 1:
        return [one(v) for v in batch]
    with ThreadPoolExecutor(max_workers=min(options.concurrency, len(batch))) as pool:
        return list(pool.map(one, batch))


def _apply_outcome(
    kube: Kube,
    report: DrainReport,
    *,
    state: DrainState,
    v: PodVerdict,
    res: EvictionResult,
    options: DrainOptions,
    say: Progress,
) -> None:
    pod, ident = v.pod, ident_of(v.pod)
    if res.outcome is Outcome.EVICTED:
        report.evicted.append(pod.key)
        if res.grace is not None:
            report.grace_sent[pod.key] = res.grace
        if not options.dry_run:
            rec = state.record(ident)
            rec.sent, rec.expected_gone = True, time.time() + _effective_grace(res.grace, pod, options)
        forget(state, ident)
    elif res.outcome in (Outcome.GONE, Outcome.REPLACED):
        forget(state, ident)
    elif res.outcome is Outcome.NAMESPACE_TERMINATING:
        report.terminating.append(pod.key)  # the namespace controller deletes it; wait like kubectl
    elif res.outcome is Outcome.BLOCKED:
        multiple = res.reason is HoldReason.MULTIPLE_PDBS
        if multiple:  # the answer names no budget: look them up; no retry can help (engine/held.py)
            res = replace(res, pdbs=budgets_selecting(kube, state, v))
        blocked = state.record(ident)
        if res.pdbs:
            blocked.pdbs = res.pdbs
        pdbs = blocked.pdbs
        now = time.time()
        if options.force_delete_on_deadline and (
            options.force_now
            or force_delete_due(pod.termination_grace_period, now, options.deadline, options.deadline_margin)
        ):
            _force(kube, report, state=state, v=v, res=res, options=options, say=say)
            return
        delay = retry_later(state, ident, options)
        due = force_delete_at(pod.termination_grace_period, options.deadline, options.deadline_margin)
        if options.force_delete_on_deadline and due is not None:
            blocked.force_at = time.monotonic() + (due - now)
        blocked.last_block = res.message
        blocked.waiting_on = [(pod.namespace, n) for n in pdbs]
        if multiple:
            park_until_deadline_policy(state, ident)
        report.blocked.append(BlockedPod(pod.key, pdbs, res.message))
        record_hold(report, state, v, res, pdbs)
        when = "not retried before the deadline policy" if multiple else f"will retry after {delay:.2f}s"
        say(f'error when evicting pods/"{pod.name}" -n "{pod.namespace}" ({when}): {res.message}')
    elif res.outcome is Outcome.THROTTLED:
        state.record(ident).waiting_on = []
        delay = retry_later(state, ident, options, res.retry_after)  # API priority and fairness: Retry-After
        report.throttled.append(pod.key)
        report.retry_after = max(report.retry_after or 0.0, delay)
    else:
        state.record(ident).waiting_on = []
        retry_later(state, ident, options)
        report.failed.append(PodReason(pod.key, f"HTTP {res.status}: {res.message}"))
        record_hold(report, state, v, res, [])
        say(f'error when evicting pods/"{pod.name}" -n "{pod.namespace}": {res.message}')


def _force(
    kube: Kube,
    report: DrainReport,
    *,
    state: DrainState,
    v: PodVerdict,
    res: EvictionResult,
    options: DrainOptions,
    say: Progress,
) -> None:
    pod = v.pod
    grace = grace_for(
        pod.termination_grace_period,
        options.grace_period,
        time.time(),
        options.deadline,
        options.deadline_margin,
    )
    if grace is None:  # the pod's own grace fits before the deadline
        own = pod.termination_grace_period
        grace = options.grace_period if options.grace_period is not None else (30 if own is None else own)
    deleted = delete_pod(kube, pod.namespace, pod.name, pod.uid, grace=grace, dry_run=options.dry_run)
    pdbs = ", ".join(state.known(ident_of(pod)).pdbs) or "its PodDisruptionBudget"
    if deleted.outcome is Outcome.EVICTED:
        left = (options.deadline or 0) - time.time()
        reason = f"{pdbs} still refused eviction {left:.0f}s before the deadline: {res.message}"
        if options.force_now:
            reason = f"{pdbs} still refused eviction, deleted on an operator's decision (force): {res.message}"
        report.forced.append(ForcedPod(pod.key, max(1, grace), reason))
        if not options.dry_run:
            rec = state.record(ident_of(pod))
            rec.sent, rec.expected_gone = True, time.time() + max(1, grace)
        say(f"deleting pod {pod.key} (grace {max(1, grace)}s): {reason}")
    elif deleted.outcome not in (Outcome.GONE, Outcome.REPLACED):
        report.failed.append(PodReason(pod.key, f"force delete: HTTP {deleted.status}: {deleted.message}"))
    forget(state, ident_of(pod))


def _effective_grace(sent: int | None, pod: PodInfo, options: DrainOptions) -> int:
    if sent is not None:
        return sent
    if options.grace_period is not None:
        return options.grace_period
    return 30 if pod.termination_grace_period is None else pod.termination_grace_period


def drain_node(
    kube: Kube | Any,
    node: str,
    options: DrainOptions,
    timeout: float | None = None,
    *,
    progress: Progress | None = None,
    hold: HoldCheck | None = None,
    seen_ips: SeenIps | None = None,
) -> DrainReport:
    """Repeat passes until the node is drained, the timeout/deadline passes, a refusal (kubectl "cannot
    delete …") stops it, or the API-call cap is reached. Dry run: a single pass. With ``hold``, also when every
    pod left is held (engine/held_pass.py): ``hold.ended`` says so. ``seen_ips`` gathers the pod IPs each LIST
    found (filled even when a pass fails after its LIST)."""
    say = progress or _quiet
    kube = kube if isinstance(kube, Kube) else Kube(kube, pool_size=options.concurrency)
    start = time.monotonic()
    end = start + timeout if timeout else float("inf")
    if options.deadline is not None:
        end = min(end, start + (options.deadline - time.time()))
    state = DrainState(seen_ips=seen_ips)
    try:
        return _drain_loop(kube, node, options, state, say, start, end, hold)
    finally:
        close_watches(state)  # a wait may have left a watch open for the next one


def _drain_loop(
    kube: Kube,
    node: str,
    options: DrainOptions,
    state: DrainState,
    say: Progress,
    start: float,
    end: float,
    hold: HoldCheck | None,
) -> DrainReport:
    calls0 = kube.calls
    total = last = drain_pass(kube, node, options, state=state, progress=say)
    interval = options.poll_min
    while not (total.refused or options.dry_run):
        if hold is not None and hold.ends(state, last):
            break
        mono = time.monotonic()
        if total.drained:
            settle = settle_wait(state, options)
            if settle <= 0 or mono + settle >= end:
                break  # listed late enough after the cordon (or no time left to look again)
            time.sleep(settle)
            before = set(state.seen)
            later = drain_pass(kube, node, options, state=state, progress=say)
            total.absorb(later)
            name_late_pods(total, later, before, say)
            continue
        if mono >= end:
            past_deadline = options.deadline is not None and time.time() >= options.deadline - 0.5
            total.warnings.append("deadline reached" if past_deadline else "timed out")
            break
        if options.max_api_calls is not None and kube.calls - calls0 >= options.max_api_calls:
            total.warnings.append(f"stopped: API call cap of {options.max_api_calls} reached")
            break
        until = end if hold is None else hold.until(end)
        check = partial(_check_node_exists, kube, node, state, options, waiting=True)
        wait_between_passes(kube, state, options, interval, until, check, node)
        interval = min(options.poll_max, interval * 1.5)
        before = set(state.seen)
        watched = drained_as_watched(state, last, say)
        later = watched or drain_pass(kube, node, options, state=state, progress=say)
        last = later if watched is None else last
        if later.evicted or later.forced:
            interval = options.poll_min
        total.absorb(later)
        name_late_pods(total, later, before, say)
    total.api_calls = kube.calls - calls0
    total.elapsed = time.monotonic() - start
    if total.drained:
        say(f"node/{node} drained")
    return total

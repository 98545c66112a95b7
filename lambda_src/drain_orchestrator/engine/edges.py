"""The drain's edge cases, kept out of the pass itself: a pod a finalizer keeps in Terminating near the deadline, a
pod whose grace runs past the deadline, the re-list of a node that looked empty too soon after its cordon (pods the
scheduler bound before it saw the cordon), the pass a watch of the pods going makes unnecessary, and warnings
printed once per drain.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import MIN_GRACE_SECONDS
from drain_orchestrator.drain.report import DrainReport, ForcedPod
from drain_orchestrator.engine.pass_state import DrainState
from drain_orchestrator.engine.pod_record import ident_of
from drain_orchestrator.kube.evict import Outcome, delete_pod
from drain_orchestrator.kube.rest import Kube

Progress = Callable[[str], None]


def redelete_stuck(
    kube: Kube,
    report: DrainReport,
    state: DrainState,
    verdicts: list[PodVerdict],
    options: DrainOptions,
    say: Progress,
) -> None:
    """A pod whose grace has run out but which a finalizer keeps in Terminating is deleted again with grace 1
    just before the deadline (once): whatever that helps, the pod and its finalizers are named in the report."""
    if options.deadline is None:
        return
    now = time.time()
    if now < options.deadline - options.deadline_margin - MIN_GRACE_SECONDS - 1:
        return
    for v in verdicts:
        ts, ident = v.pod.deletion_timestamp, ident_of(v.pod)
        if v.verdict is not Verdict.WAIT or ts is None or ts > now or ident in state.redeleted:
            continue
        state.redeleted.add(ident)
        res = delete_pod(kube, v.pod.namespace, v.pod.name, v.pod.uid, grace=1, dry_run=options.dry_run)
        held = ", ".join(v.pod.finalizers) or "none left"
        reason = f"stuck terminating {now - ts:.0f}s past its grace (finalizers: {held}): deleted again, grace 1s"
        if res.outcome is Outcome.EVICTED:
            report.forced.append(ForcedPod(v.pod.key, 1, reason))
            say(f"deleting pod {v.pod.key} (grace 1s): {reason}")


def note_problems(report: DrainReport, state: DrainState, problems: list[str], say: Progress) -> None:
    for line in problems:
        report.warnings.append(f"Warning: {line}")
        if line not in state.noted:
            state.noted.add(line)
            say(f"Warning: {line}")


def settle_wait(state: DrainState, options: DrainOptions) -> float:
    """Seconds until a LIST would be ``settle_seconds`` after the cordon; 0 when the last one already was."""
    if state.cordoned_at is None or state.listed_at is None:
        return 0.0
    return max(0.0, state.cordoned_at + options.settle_seconds - state.listed_at)


def drained_as_watched(state: DrainState, last: DrainReport, say: Progress) -> DrainReport | None:
    """The pass after a wait that watched every pod the last pass left go and none arrive (PodsWatched.GONE): the
    node holds the last LIST's pods less those, so the pass would find it drained; its report, without the LIST.
    None when the watch does not settle it (a pass lists)."""
    gone, state.watched_gone = state.watched_gone, set()
    if not gone or not state.only_going or state.listing is None or state.watched_at is None:
        return None
    if state.surge.held:  # a surge to take back once its replacement is Ready: the pass looks at that
        return None
    pods = [PodInfo.from_dict(p) for p in state.listing.items]
    uid_of = {p.key: p.uid for p in pods}
    if not all(uid_of.get(key) in gone for key in last.remaining):
        return None
    for p in pods:
        rec = state.pods.get(ident_of(p))
        if p.uid in gone and rec is not None and rec.sent:
            say(f"pod/{p.name} evicted")
            rec.sent, rec.expected_gone = False, None
            state.tidy(ident_of(p))
    state.listed_at = state.watched_at  # as good as a LIST then, for the look after the cordon
    state.only_going = False
    return DrainReport(
        node=last.node, dry_run=last.dry_run, cordoned=True, drained=True, skipped=last.skipped, passes=0
    )


def name_late_pods(total: DrainReport, later: DrainReport, before: set[str], say: Progress) -> None:
    """Pods bound to the node after it looked empty (the scheduler had not seen the cordon yet): drained like
    the others, and named."""
    late = sorted({*later.evicted, *later.remaining, *(f.pod for f in later.forced)} - before)
    if late:
        line = f"Warning: bound to the node after the cordon, drained too: {', '.join(late)}"
        total.warnings.append(line)
        say(line)


def shorten_past_deadline(
    kube: Kube,
    report: DrainReport,
    state: DrainState,
    verdicts: list[PodVerdict],
    options: DrainOptions,
    say: Progress,
) -> None:
    """A pod already terminating whose grace runs past the deadline (deleted earlier with a long grace) gets
    a second DELETE with the time that is left, which the apiserver accepts only to shorten the grace."""
    if options.deadline is None:
        return
    limit = options.deadline - options.deadline_margin
    for v in verdicts:
        ts = v.pod.deletion_timestamp
        if v.verdict is not Verdict.WAIT or ts is None or ts <= limit:
            continue
        grace = max(1, int(limit - time.time()))
        res = delete_pod(kube, v.pod.namespace, v.pod.name, v.pod.uid, grace=grace, dry_run=options.dry_run)
        if res.outcome is Outcome.EVICTED:
            reason = f"terminating until {ts - options.deadline:.0f}s past the deadline: grace shortened"
            report.forced.append(ForcedPod(v.pod.key, grace, reason))
            state.record(ident_of(v.pod)).expected_gone = time.time() + grace
            say(f"deleting pod {v.pod.key} (grace {grace}s): {reason}")

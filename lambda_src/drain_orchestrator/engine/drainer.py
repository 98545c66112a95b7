"""Drain a node: one ``Drainer`` per drain, in the manner of kubectl's drain ``Helper`` and Karpenter's
``Terminator``: it holds the client, the node, the options, the clock and what the drain remembers between passes
(engine/parts.py), and repeats passes (``drain_pass``) until the node is drained (``drain``).

A pass cordons (once), lists the node's pods, classifies them (kubectl semantics), evicts the active tier
concurrently, and returns a DrainReport; it never waits for pods to go. Passes converge: a pod already terminating is
only waited on, a pod that is gone or replaced (404/409) counts as done, so repeating a pass, or running two drains
of one node at once, does no harm. Between passes the drainer waits until the next one is worth it (waits.py).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict, refusal_errors
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import active_tier, force_delete_due, to_evict_now, waiting_for_order
from drain_orchestrator.drain.policy import ORDER_ANNOTATION, Hold
from drain_orchestrator.drain.report import BlockedPod, DrainReport, PodReason
from drain_orchestrator.drain.turns import Key
from drain_orchestrator.engine.clock import CLOCK, Clock
from drain_orchestrator.engine.evictions import Evictions
from drain_orchestrator.engine.held_pass import HoldCheck
from drain_orchestrator.engine.parts import Progress
from drain_orchestrator.engine.pod_record import ident_of
from drain_orchestrator.engine.surge import record_seen, surge_pass
from drain_orchestrator.engine.verdicts import classify_node
from drain_orchestrator.engine.waits import Waits
from drain_orchestrator.kube.cordon import ANN_STARTED_AT, cordon
from drain_orchestrator.kube.pods import NodePods, SeenIps, list_and_watch_node_pods, list_node_pods_at
from drain_orchestrator.kube.rest import Kube

__all__ = ["Drainer", "drain_node", "look_late"]


class Drainer(Evictions, Waits):
    """One drain of one node. ``kube``: a Kube, or an ApiClient to wrap in one. ``seen_ips`` gathers the pod IPs each
    LIST found (filled even when a pass fails after its LIST). Close it (or use it as a context manager): a wait may
    leave a watch open for the next one."""

    def __init__(
        self,
        kube: Kube | Any,
        node: str,
        options: DrainOptions,
        *,
        clock: Clock = CLOCK,
        progress: Progress | None = None,
        seen_ips: SeenIps | None = None,
    ) -> None:
        kube = kube if isinstance(kube, Kube) else Kube(kube, pool_size=options.concurrency)
        super().__init__(kube, node, options, clock=clock, progress=progress, seen_ips=seen_ips)

    def __enter__(self) -> Drainer:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close_watches()

    def drain(self, timeout: float | None = None, hold: HoldCheck | None = None) -> DrainReport:
        """Repeat passes until the node is drained, the timeout/deadline passes, a refusal (kubectl "cannot
        delete …") stops it, or the API-call cap is reached. Dry run: a single pass. With ``hold``, also when every
        pod left is held (engine/held_pass.py): ``hold.ended`` says so."""
        options, clock, kube = self.options, self.clock, self.kube
        start = clock.mono()
        end = start + timeout if timeout else float("inf")
        if options.deadline is not None:
            end = min(end, clock.mono_at(options.deadline))
        calls0 = kube.calls
        total = last = self.drain_pass()
        interval = options.poll_min
        while not (total.refused or options.dry_run):
            if hold is not None and hold.ends(self, last):
                break
            mono = clock.mono()
            if total.drained:
                if not self._look_again(end):
                    break  # listed once the control plane had the cordon, and watched to the late look's end
                before = set(self.view.seen)
                later = self.drain_pass()
                total.absorb(later)
                self._name_late_pods(total, later, before)
                continue
            if mono >= end:
                past_deadline = options.deadline is not None and clock.wall() >= options.deadline - 0.5
                total.warnings.append("deadline reached" if past_deadline else "timed out")
                break
            if options.max_api_calls is not None and kube.calls - calls0 >= options.max_api_calls:
                total.warnings.append(f"stopped: API call cap of {options.max_api_calls} reached")
                break
            self.wait_between_passes(interval, end if hold is None else hold.until(end), keep_until=end)
            interval = min(options.poll_max, interval * 1.5)
            before = set(self.view.seen)
            watched = self._drained_as_watched(last)
            later = watched or self.drain_pass()
            last = later if watched is None else last
            if later.evicted or later.forced:
                interval = options.poll_min
            total.absorb(later)
            self._name_late_pods(total, later, before)
        total.api_calls = kube.calls - calls0
        total.elapsed = clock.mono() - start
        if total.drained:
            known = self.view.known_until
            total.listed_at = None if known is None else clock.wall_at(known)
            self.say(f"node/{self.node} drained")
        return total

    def drain_pass(self) -> DrainReport:
        """Do every drain action currently possible on the node and report; never waits for pods to go."""
        options, view, kube, clock = self.options, self.view, self.kube, self.clock
        started, calls0 = clock.mono(), kube.calls
        report = DrainReport(node=self.node, dry_run=options.dry_run)

        if not view.cordoned:
            result = cordon(
                kube,
                self.node,
                reason=options.reason,
                event_id=options.event_id,
                deadline=options.deadline,
                taint=options.drain_taint,
                exclude_from_load_balancers=options.exclude_from_load_balancers,
                now=clock.wall(),
                dry_run=options.dry_run,
                pin=options.node_pin,
            )
            self.say(f"node/{self.node} cordoned" if result.changed else f"node/{self.node} already cordoned")
            view.cordoned_now(result.cordoned_at, whole_second=ANN_STARTED_AT in result.annotations)
            record_seen(self.surge, result.annotations)  # the surge record as the cordon read it
        else:
            view.look(options)
        report.cordoned = True
        if not options.dry_run:
            view.note_witness()  # seen before the LIST below (the node's watch, opened here), that LIST counts

        # a LIST of its own (a listing of another caller's, or a drain before, may miss a pod bound since), except after
        # a wait on budgets: its own LIST, with what the pods' watch from it saw since, names the pods a turn admits
        turn_came = self.budgets.turn_came()
        reused = self._reused_listing(turn_came)
        sent_at = clock.mono()
        listed = reused if reused is not None else self._list(options)
        if reused is None:
            view.listed(listed, sent_at)
            self.leaving.drop_early_unless(listed.resource_version)
        pods = [PodInfo.from_dict(p) for p in listed.items]
        for key in self.pods.announce_gone({ident_of(p) for p in pods}):  # 404 or a new pod under the same name
            self.say(f"pod/{key.split('/', 1)[1]} evicted")
        view.seen.update(p.key for p in pods)
        now = clock.wall()
        found = classify_node(kube, pods, options, self.pods.owners, now)
        verdicts = found.verdicts
        self._record_verdicts(report, verdicts)
        self._note_problems(report, found.problems)
        self.pods.note_releases(verdicts, found.policies, options, now)

        candidates = [] if report.refused else to_evict_now(verdicts)
        if reused is not None:  # sent since that LIST: on their way out, not to be sent again
            candidates = [v for v in candidates if not self.pods.known(ident_of(v.pod)).sent]
        self._hold_first_wave(candidates)  # in a storm: budget-bound pods go at their turn
        batch, by_budget = self._due(candidates)
        if batch and not options.dry_run:
            view.note_witness()  # seen before these evictions go, a watch seeing them go counts (_drained_as_watched)
        sent_at = clock.mono()
        results = self._evict_all(batch)
        for v, res in zip(batch, results, strict=True):
            self._apply_outcome(report, v, res)
        admitted = [
            (r.outcome, by_budget[i])
            for v, r in zip(batch, results, strict=True)
            if (i := ident_of(v.pod)) in by_budget
        ]
        self.turns.after_evictions(admitted, options, sent_at)
        for v in candidates:  # waiting for their retry time: still blocked, as last reported
            ident = ident_of(v.pod)
            rec = self.pods.known(ident)
            if v not in batch and rec.last_block is not None:
                report.blocked.append(BlockedPod(v.pod.key, rec.pdbs, rec.last_block))
            if v not in batch:
                self._report_waiting(report, ident)
        by_order = held_by_order(report, verdicts)
        report.held_by_policy += by_order
        self.leaving.next_stage_waits = bool(set(waiting_for_order(verdicts)) - {p.pod.split("/")[0] for p in by_order})
        at_turn = turn_came and reused is not None  # the pods as a turn's pass reads them: no surge decided on them
        if options.surge != "never" and not options.dry_run and not report.refused and not at_turn:
            surge_pass(kube, self.node, report, verdicts, self.surge, options, self.pods.owners)  # replacements first

        if options.force_delete_on_deadline and not report.refused:
            self._shorten_past_deadline(report, verdicts)
        self._redelete_stuck(report, verdicts)
        report.active_tier = active_tier(verdicts)
        report.remaining = [v.pod.key for v in verdicts if v.verdict in (Verdict.EVICT, Verdict.WAIT, Verdict.HOLD)]
        report.drained = not report.remaining and not report.refused and reused is None
        # a pass that reuses the last LIST may show the pods earlier passes sent still running: they are on their way
        # out all the same (by identity: a successor under the name is not)
        sent = {v.pod.key for v in verdicts if self.pods.known(ident_of(v.pod)).sent}
        going = only_going(report, sent)
        self.leaving.after_pass(verdicts, going, clock, evicted_at=sent_at if report.evicted else None)
        report.api_calls = kube.calls - calls0
        report.draining_seen = self.turns.draining_seen
        report.elapsed = clock.mono() - started
        return report

    def _list(self, options: DrainOptions) -> NodePods:
        """A LIST of the node's pods of the pass's own. Where the apiserver streams lists, the LIST and the watch of
        the pods from it are one request: the watch is kept for the waits and the turns of this pass to read on
        from (Leaving.early), where a LIST and a watch were two."""
        leaving = self.leaving
        streamed = list_and_watch_node_pods(self.kube, self.node, options.pod_selector) if leaving.watchable else None
        if streamed is None:
            return list_node_pods_at(self.kube, self.node, options.pod_selector)
        listing, watch = streamed
        leaving.adopt_early(watch, listing.resource_version)
        return listing

    def _reused_listing(self, turn_came: bool) -> NodePods | None:
        """The node's pods without a LIST (None: list them): the last LIST caught up by the pods' watch from it, after
        a wait on budgets (a turn, or its time ran out), while a pod it shows still waits on a budget; after a turn
        without such a watch, that LIST while younger than TURN_LISTING_SECONDS. A pass that reuses a listing never
        finds the node drained: once no pod waiting on a budget is left on the node (another drain of the node evicted
        them, their owner deleted them), the pass lists, and finds it drained."""
        waiting = {r.ident for r in self.pods if r.waiting_on}
        if not waiting:
            return None
        caught_up = self.leaving.catch_up(self.view)
        if caught_up is None:
            return self.view.turn_listing() if turn_came else None
        return caught_up if any(ident_of(PodInfo.from_dict(p)) in waiting for p in caught_up.items) else None

    def _due(self, batch: list[PodVerdict]) -> tuple[list[PodVerdict], dict[str, list[Key]]]:
        """The pods to try now, and which of them a budget admitted at this drain's turn (with those budgets).

        A pod refused by a named PDB is retried only right after a wait saw that PDB allowing disruptions at this
        drain's turn, and no more of them than it allows; other retries wait for their backoff. The deadline policy
        may act on any pod."""
        options, pods = self.options, self.pods
        mono, now = self.clock.mono(), self.clock.wall()
        idents = [ident_of(v.pod) for v in batch]
        waiting = [(i, pods.known(i).waiting_on) for i in idents if pods.known(i).waiting_on]
        share = self.turns.admitted(waiting, self.budgets.allowing() if waiting else {})

        def ready(v: PodVerdict) -> bool:
            ident = ident_of(v.pod)
            if ident in share:
                return True
            rec = pods.known(ident)
            if not rec.waiting_on and (rec.not_before or 0.0) <= mono:
                return True
            return options.force_delete_on_deadline and (
                options.force_now
                or force_delete_due(v.pod.termination_grace_period, now, options.deadline, options.deadline_margin)
            )

        return [v for v in batch if ready(v)], share

    def _drained_as_watched(self, last: DrainReport) -> DrainReport | None:
        """The pass after a wait that watched every pod the last pass left go and none arrive (PodsWatched.GONE): the
        node holds the last LIST's pods less those, so the pass would find it drained; its report, without the LIST.
        None when the watch cannot tell (a pass lists)."""
        leaving, listing = self.leaving, self.view.listing
        gone = leaving.took()
        if not gone or not leaving.only_going or listing is None or leaving.watched_at is None:
            return None
        if self.surge.in_place:  # a surge to take back once its replacement is Ready: the pass looks at that
            return None
        pods = [PodInfo.from_dict(p) for p in listing.items]
        uid_of = {p.key: p.uid for p in pods}
        if not all(uid_of.get(key) in gone for key in last.remaining):
            return None
        for p in pods:
            rec = self.pods.by_ident.get(ident_of(p))
            if p.uid in gone and rec is not None and rec.sent:
                self.say(f"pod/{p.name} evicted")
                self.pods.gone(rec)
        self.view.watched_empty(leaving.watched_at, leaving.evicted_at)
        leaving.only_going = False
        return DrainReport(
            node=last.node, dry_run=last.dry_run, cordoned=True, drained=True, skipped=last.skipped, passes=0
        )

    def _look_again(self, end: float) -> bool:
        """The node looked drained: whether a pass should list it again. Yes until a LIST was sent once the control
        plane had the cordon (its witness: engine/node_view.py); then, until the late look's end, whenever a pod
        arrives on the node (watched from that LIST). No when ``end`` leaves no time."""
        view, clock = self.view, self.clock
        if clock.mono() >= end:
            return False
        view.await_witness(self.options, end)
        if not view.listed_since_witness():
            if not view.witnessed:
                self.say(f"node/{self.node}: no sign yet that the control plane saw the cordon; listed again")
            return clock.mono() < end
        until = view.late_look_at(self.options)
        if until is None or view.pods_version is None:
            return False
        return self.watch_for_late_pods(min(until, end))

    def _record_verdicts(self, report: DrainReport, verdicts: list[PodVerdict]) -> None:
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
                report.held_by_policy.append(PodReason(v.pod.key, v.reason, v.hold))
        for msg, keys in warnings.items():
            line = f"Warning: {msg}: {', '.join(keys)}"
            report.warnings.append(line)
            self.say(line)
        for err in refusal_errors(verdicts):
            self.say(f"error: {err}")

    def _note_problems(self, report: DrainReport, problems: list[str]) -> None:
        """Invalid annotations, failed controller lookups: in every pass's report, printed once per drain."""
        for line in problems:
            report.warnings.append(f"Warning: {line}")
            if line not in self.noted:
                self.noted.add(line)
                self.say(f"Warning: {line}")

    def _name_late_pods(self, total: DrainReport, later: DrainReport, before: set[str]) -> None:
        """Pods bound to the node after it looked empty (the scheduler had not seen the cordon yet): drained like
        the others, and named."""
        late = sorted(later.removing() - before)
        if late:
            line = LATE_WARNING + ", ".join(late)
            total.warnings.append(line)
            self.say(line)


def held_by_order(report: DrainReport, verdicts: list[PodVerdict]) -> list[PodReason]:
    """The pods that wait for an earlier evict-order of their namespace while a pod of that order is held (a budget
    refuses it, its eviction fails): held by their evict-order. Those that wait for pods on their way out are not
    held: they go once those are gone. Only the namespace's own pods are named."""
    stuck = {b.pod for b in report.blocked} | {f.pod for f in report.failed} | {h.pod for h in report.held}
    out = []
    for ns, waiting in sorted(waiting_for_order(verdicts).items()):
        held = sorted(v.pod.key for v in verdicts if v.pod.namespace == ns and v.pod.key in stuck)
        if not held:
            continue
        which = held[0] + (f" and {len(held) - 1} more" if len(held) > 1 else "")
        for v in waiting:
            why = f"{ORDER_ANNOTATION}={v.order}: waits for the earlier orders of {ns}; {which} is held"
            out.append(PodReason(v.pod.key, why, Hold.EVICT_ORDER.value))
    return out


def only_going(report: DrainReport, sent: set[str] | frozenset[str] = frozenset()) -> bool:
    """Every pod the pass left is on its way out (``sent``: the pods earlier passes sent on their way): nothing to
    retry, hold or wait on."""
    going = {*report.evicted, *report.terminating, *(f.pod for f in report.forced), *sent}
    stuck = report.blocked or report.throttled or report.failed or report.held_by_policy or report.refused
    return bool(report.remaining) and not stuck and set(report.remaining) <= going


LATE_WARNING = "Warning: bound to the node after the cordon, drained too: "


def look_late(
    kube: Kube | Any,
    node: str,
    options: DrainOptions,
    timeout: float | None = None,
    *,
    progress: Progress | None = None,
    hold: HoldCheck | None = None,
) -> DrainReport:
    """The late look at a node its drain left drained (``options.settle_seconds`` after the cordon: the flow's,
    workflow/late_look.py): a drain, so every pod it finds to remove was bound after the cordon, and is named."""
    report = drain_node(kube, node, options, timeout, progress=progress, hold=hold)
    late = sorted(report.removing())
    if late:
        report.warnings = [w for w in report.warnings if not w.startswith(LATE_WARNING)]
        report.warnings.append(LATE_WARNING + ", ".join(late))
    return report


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
    """One drain of ``node`` (``Drainer.drain``), its watches closed at the end: what the workflow's pass step and
    the command line's ``drain`` run, as kubectl's ``RunNodeDrain`` runs its ``Helper``."""
    with Drainer(kube, node, options, progress=progress, seen_ips=seen_ips) as drainer:
        return drainer.drain(timeout, hold)

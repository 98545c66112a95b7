"""The drainer's evictions and deletes, and what each answer leaves in its pod records.

An eviction that went through sends the pod on its way (timed until its grace ends); one refused by a budget waits
for this drain's turn at it (or is deleted when the deadline policy says so); one throttled or failed is retried
after a backoff. The reason each pod did not go is kept for the report. A pod selected by more than one
PodDisruptionBudget is never evicted by the eviction API (it answers 500 "This pod has more than one
PodDisruptionBudget…" and names none): the budgets are looked up so the report names them, and the pod is not
retried until the deadline policy acts on it (force-delete near the deadline, or the deadline's verdict). Near the
deadline, a pod whose grace runs past it gets a shorter one, and a pod a finalizer keeps in Terminating is deleted
again.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import replace

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import MIN_GRACE_SECONDS, force_delete_at, force_delete_due, grace_for
from drain_orchestrator.drain.report import BlockedPod, DrainReport, ForcedPod, HeldPod, PodReason
from drain_orchestrator.drain.selector import selecting
from drain_orchestrator.engine.parts import DrainParts
from drain_orchestrator.engine.pod_record import ident_of
from drain_orchestrator.kube.evict import EvictionResult, HoldReason, Outcome, delete_pod, evict_pod


class Evictions(DrainParts):
    def _evict_all(self, batch: list[PodVerdict]) -> list[EvictionResult]:
        options = self.options

        def one(v: PodVerdict) -> EvictionResult:
            grace = grace_for(
                v.pod.termination_grace_period,
                options.grace_period,
                self.clock.wall(),
                options.deadline,
                options.deadline_margin,
                keeps_name=v.pod.keeps_name,
            )
            res = evict_pod(self.kube, v.pod.namespace, v.pod.name, v.pod.uid, grace=grace, dry_run=options.dry_run)
            return replace(res, grace=grace)

        for v in batch:
            self.say(f"evicting pod {v.pod.key}" + (" (server dry run)" if options.dry_run else ""))
        if len(batch) <= 1:
            return [one(v) for v in batch]
        with ThreadPoolExecutor(max_workers=min(options.concurrency, len(batch))) as pool:
            futures = [pool.submit(one, v) for v in batch]
            if not options.dry_run:
                self._watch_going_early(futures)
            return [f.result() for f in futures]

    def _watch_going_early(self, futures: list[Future[EvictionResult]]) -> None:
        """The batch's first answer an eviction that went through: the node's pods are watched from the pass's LIST
        at once, and the wait after the pass reads on from that watch instead of opening its own (the same one
        request), so it takes the deletions as they come rather than replayed after the batch's last answer. A
        first answer that is a refusal opens none: that pass waits on budgets, not on a watch of the pods."""
        first = next(as_completed(futures)).result()
        if first.outcome is Outcome.EVICTED:
            self.leaving.watch_early(self.kube, self.node, self.view.pods_version)

    def _apply_outcome(self, report: DrainReport, v: PodVerdict, res: EvictionResult) -> None:
        options, pods = self.options, self.pods
        pod, ident = v.pod, ident_of(v.pod)
        if res.outcome is Outcome.EVICTED:
            report.evicted.append(pod.key)
            if res.grace is not None:
                report.grace_sent[pod.key] = res.grace
            if not options.dry_run:
                pods.sent(ident, effective_grace(res.grace, pod, options))
            pods.forget(ident)
        elif res.outcome in (Outcome.GONE, Outcome.REPLACED):
            pods.forget(ident)
        elif res.outcome is Outcome.NAMESPACE_TERMINATING:
            report.terminating.append(pod.key)  # the namespace controller deletes it; wait like kubectl
        elif res.outcome is Outcome.BLOCKED:
            multiple = res.reason is HoldReason.MULTIPLE_PDBS
            if multiple:  # the answer names no budget: look them up; no retry can help
                res = replace(res, pdbs=self._budgets_selecting(v))
            blocked = pods.record(ident)
            if res.pdbs:
                blocked.pdbs = res.pdbs
            pdbs = blocked.pdbs
            now = self.clock.wall()
            if options.force_delete_on_deadline and (
                options.force_now
                or force_delete_due(pod.termination_grace_period, now, options.deadline, options.deadline_margin)
            ):
                self._force(report, v, res)
                return
            delay = pods.retry_later(ident, options)
            due = force_delete_at(pod.termination_grace_period, options.deadline, options.deadline_margin)
            if options.force_delete_on_deadline and due is not None:
                blocked.force_at = self.clock.mono() + (due - now)
            blocked.last_block = res.message
            blocked.waiting_on = [(pod.namespace, n) for n in pdbs]
            if multiple:
                pods.park(ident)
            report.blocked.append(BlockedPod(pod.key, pdbs, res.message))
            self._record_hold(report, v, res, pdbs)
            when = "not retried before the deadline policy" if multiple else f"will retry after {delay:.2f}s"
            self.say(f'error when evicting pods/"{pod.name}" -n "{pod.namespace}" ({when}): {res.message}')
        elif res.outcome is Outcome.THROTTLED:
            pods.record(ident).waiting_on = []
            delay = pods.retry_later(ident, options, res.retry_after)  # API priority and fairness: Retry-After
            report.throttled.append(pod.key)
            report.retry_after = max(report.retry_after or 0.0, delay)
        else:
            pods.record(ident).waiting_on = []
            pods.retry_later(ident, options)
            report.failed.append(PodReason(pod.key, f"HTTP {res.status}: {res.message}"))
            self._record_hold(report, v, res, [])
            self.say(f'error when evicting pods/"{pod.name}" -n "{pod.namespace}": {res.message}')

    def _force(self, report: DrainReport, v: PodVerdict, res: EvictionResult) -> None:
        options, pod = self.options, v.pod
        grace = grace_for(
            pod.termination_grace_period,
            options.grace_period,
            self.clock.wall(),
            options.deadline,
            options.deadline_margin,
        )
        if grace is None:  # the pod's own grace fits before the deadline
            own = pod.termination_grace_period
            grace = options.grace_period if options.grace_period is not None else (30 if own is None else own)
        grace = max(MIN_GRACE_SECONDS, grace)  # a delete past its budget is the drain's choice: never 0
        deleted = delete_pod(self.kube, pod.namespace, pod.name, pod.uid, grace=grace, dry_run=options.dry_run)
        pdbs = ", ".join(self.pods.known(ident_of(pod)).pdbs) or "its PodDisruptionBudget"
        if deleted.outcome is Outcome.EVICTED:
            left = (options.deadline or 0) - self.clock.wall()
            reason = f"{pdbs} still refused eviction {left:.0f}s before the deadline: {res.message}"
            if options.force_now:
                reason = f"{pdbs} still refused eviction, deleted on an operator's decision (force): {res.message}"
            report.forced.append(ForcedPod(pod.key, grace, reason))
            if not options.dry_run:
                self.pods.sent(ident_of(pod), grace)
            self.say(f"deleting pod {pod.key} (grace {grace}s): {reason}")
        elif deleted.outcome not in (Outcome.GONE, Outcome.REPLACED):
            report.failed.append(PodReason(pod.key, f"force delete: HTTP {deleted.status}: {deleted.message}"))
        self.pods.forget(ident_of(pod))

    def _budgets_selecting(self, v: PodVerdict) -> list[str]:
        """The PDBs selecting the pod (one LIST of its namespace's budgets, remembered for the drain)."""
        rec = self.pods.record(ident_of(v.pod))
        if rec.pdbs:
            return rec.pdbs
        resp = self.kube.request("GET", f"/apis/policy/v1/namespaces/{v.pod.namespace}/poddisruptionbudgets")
        if not resp.ok:
            return []  # the reason stands without the names
        names = selecting(list(resp.body.get("items") or []), v.pod.namespace, v.pod.labels)
        rec.pdbs = names
        return names

    def _record_hold(self, report: DrainReport, v: PodVerdict, res: EvictionResult, pdbs: list[str]) -> None:
        hold = HeldPod(
            pod=v.pod.key,
            reason=(res.reason or HoldReason.EVICTION_FAILED).value,
            message=res.message,
            pdbs=list(pdbs),
            status=res.status,
        )
        self.pods.record(ident_of(v.pod)).last_hold = hold
        report.held.append(hold)

    def _report_waiting(self, report: DrainReport, ident: str) -> None:
        """A pod waiting for its retry time keeps the reason it was last refused with."""
        hold = self.pods.known(ident).last_hold
        if hold is not None and all(h.pod != hold.pod for h in report.held):
            report.held.append(hold)

    def _redelete_stuck(self, report: DrainReport, verdicts: list[PodVerdict]) -> None:
        """A pod whose grace has run out but which a finalizer keeps in Terminating is deleted again with grace 1
        just before the deadline (once): whatever that helps, the pod and its finalizers are named in the report."""
        options = self.options
        if options.deadline is None:
            return
        now = self.clock.wall()
        if now < options.deadline - options.deadline_margin - MIN_GRACE_SECONDS - 1:
            return
        for v in verdicts:
            ts, ident = v.pod.deletion_timestamp, ident_of(v.pod)
            if v.verdict is not Verdict.WAIT or ts is None or ts > now or ident in self.pods.redeleted:
                continue
            self.pods.redeleted.add(ident)
            res = delete_pod(self.kube, v.pod.namespace, v.pod.name, v.pod.uid, grace=1, dry_run=options.dry_run)
            held = ", ".join(v.pod.finalizers) or "none left"
            reason = f"stuck terminating {now - ts:.0f}s past its grace (finalizers: {held}): deleted again, grace 1s"
            if res.outcome is Outcome.EVICTED:
                report.forced.append(ForcedPod(v.pod.key, 1, reason))
                self.say(f"deleting pod {v.pod.key} (grace 1s): {reason}")

    def _shorten_past_deadline(self, report: DrainReport, verdicts: list[PodVerdict]) -> None:
        """A pod already terminating whose grace runs past the deadline (deleted earlier with a long grace) gets
        a second DELETE with the time that is left, which the apiserver accepts only to shorten the grace."""
        options = self.options
        if options.deadline is None:
            return
        limit = options.deadline - options.deadline_margin
        for v in verdicts:
            ts = v.pod.deletion_timestamp
            if v.verdict is not Verdict.WAIT or ts is None or ts <= limit:
                continue
            grace = max(1, int(limit - self.clock.wall()))
            res = delete_pod(self.kube, v.pod.namespace, v.pod.name, v.pod.uid, grace=grace, dry_run=options.dry_run)
            if res.outcome is Outcome.EVICTED:
                reason = f"terminating until {ts - options.deadline:.0f}s past the deadline: grace shortened"
                report.forced.append(ForcedPod(v.pod.key, grace, reason))
                self.pods.record(ident_of(v.pod)).expected_gone = self.clock.mono() + grace
                self.say(f"deleting pod {v.pod.key} (grace {grace}s): {reason}")


def effective_grace(sent: int | None, pod: PodInfo, options: DrainOptions) -> int:
    """The grace a pod was sent with: the one sent, else the drain's, else its own (30 s when it has none)."""
    if sent is not None:
        return sent
    if options.grace_period is not None:
        return options.grace_period
    return 30 if pod.termination_grace_period is None else pod.termination_grace_period

"""The drainer's wait between passes: until the next pass is worth it. A budget that refused a pod gives this drain
its turn (watched: engine/budget_wait.py), the pods on their way out are gone (a watch of the node's pods), a retry
or the deadline policy is due (the drain's own timers), or a node check is due; no fixed sleep, no polling while a
watch can say it. Times are monotonic (engine/clock.py).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from http import HTTPStatus

from drain_orchestrator.drain.plan import next_poll
from drain_orchestrator.drain.turns import Key
from drain_orchestrator.engine.budget_wait import BUDGET_WAIT_SECONDS, wait_for_budget
from drain_orchestrator.engine.clock import CLOCK, Clock
from drain_orchestrator.engine.first_wave import FirstWave
from drain_orchestrator.kube.pods import watch_node_pods
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.watch import Watch


class PodsWatched(StrEnum):
    """How a wait for pods to go ended."""

    GONE = "gone"  # every pod waited for went and none arrived: the node holds the LIST's pods less those
    ARRIVED = "arrived"  # a pod was bound to the node meanwhile: the next pass lists it and sends it on its way
    ENDED = "ended"  # the time ran out, the watch was cut or its version is gone (410): the next pass lists again
    FORBIDDEN = "forbidden"  # the role may not watch pods (not upgraded yet): the caller polls


class Waits(FirstWave):
    def wait_between_passes(self, interval: float, end: float, keep_until: float | None = None) -> None:
        """Sleep until the next pass is worth it (``end``: at the latest). A wait on budgets lasts up to
        BUDGET_WAIT_SECONDS, the node checked meanwhile, and leaves the pods' watch running (the pass at the turn reads
        the node's pods from it); a wait for pods to go watches the node's pods (on from the watch the pass opened as
        its evictions went, if it did). ``keep_until`` (monotonic; default ``end``): how long the drain may come back
        for more waits (a held pass's ``end`` is its linger, which a moving budget extends): the budgets' watch is
        asked for that long, and the drain closes it when it ends."""
        options, pods, leaving = self.options, self.pods, self.leaving
        mono = self.clock.mono()
        keep_open = max(0.0, (end if keep_until is None else max(end, keep_until)) - mono)
        retry_at = pods.next_action()
        # never longer than a node check: a node deleted during a PDB wait is noticed by the next pass
        budget = max(0.0, min(end, retry_at, mono + options.node_check_seconds) - mono)
        budgets = pods.waited_budgets()
        going = leaving.deletion_times or any(r.sent for r in pods)
        if budgets:
            # budgets first, pods going or not: a rise is taken in turn only by a drain watching it (pods that go
            # meanwhile are seen by the pass after; the node cannot be drained before its budget-bound pods anyway)
            wait = max(0.0, min(end, retry_at, mono + BUDGET_WAIT_SECONDS) - mono)
            if leaving.next_stage_waits:  # another namespace's next evict-order is due when its pods have gone
                wait = min(wait, self._until_gone(mono))
            if wait > 0:
                self._wait_for_budgets(budgets, wait, keep_open)
                return
        since = self.view.pods_version
        if going and since and leaving.watchable:
            wait = max(0.0, min(end, retry_at) - mono)
            uids = leaving.uids | pods.sent_uids()
            early = leaving.take_early(since)
            try:
                gone = wait_for_deletions(
                    self.kube, self.node, since, uids, wait, check=self._look_waiting, check_every=budget, watch=early
                )
            finally:
                if early is not None:
                    early.close()
            if gone is PodsWatched.FORBIDDEN:  # the role cannot watch pods (not upgraded yet): poll instead
                leaving.watchable = False
            else:
                if gone is PodsWatched.GONE:
                    leaving.watched_gone, leaving.watched_at = uids, self.clock.mono()
                for r in pods:
                    r.expected_gone = None
                    pods.tidy(r.ident)
                return
        now = self.clock.mono()
        overdue = [r for r in pods if r.expected_gone is not None and r.expected_gone <= now]
        if overdue:
            # pods whose grace has run out (0 s: deleted at once): look again right away, once per pod
            for r in overdue:
                r.expected_gone = None
                pods.tidy(r.ident)
            self.clock.sleep(min(0.02, budget) if budget > 0 else 0.0)
            return
        if going:
            times = [*leaving.deletion_times, *(r.expected_gone for r in pods if r.expected_gone is not None)]
            delay = next_poll(now, times, interval, options.poll_min, options.poll_max)
            self.clock.sleep(min(delay, budget) if budget > 0 else options.poll_min)
            return
        if budgets and budget > 0:
            self._wait_for_budgets(budgets, budget, keep_open)
            return
        if any(r.release_at is not None for r in pods) and budget > 0:
            self.clock.sleep(budget)  # only pods let finish: look every node check (or at a release), not every second
            return
        self.clock.sleep(min(budget, options.poll_max) if budget > 0 else options.poll_min)

    def watch_for_late_pods(self, until: float) -> bool:
        """The late look: the node's pods watched from the last LIST until ``until``. True: a pass should list again
        (a pod arrived, the watch ended early, or the role may not watch pods: a LIST at ``until``); False: none
        arrived (as good as a LIST then)."""
        view, leaving = self.view, self.leaving
        wait = until - self.clock.mono()
        if wait <= 0:
            return False
        since = view.pods_version
        if since and leaving.watchable:
            check_every = self.options.node_check_seconds
            got = wait_for_deletions(
                self.kube,
                self.node,
                since,
                set(),
                wait,
                check=self._look_waiting,
                check_every=check_every,
                quiet_until=until,
                clock=self.clock,
                watch=leaving.take_early(since),  # the one that came with that LIST, if it did: no request
            )
            if got is PodsWatched.GONE:
                view.listed_at = self.clock.mono()
                return False
            if got is not PodsWatched.FORBIDDEN:
                return True
            leaving.watchable = False
        self.clock.sleep(max(0.0, until - self.clock.mono()))
        return True

    def _until_gone(self, mono: float) -> float:
        """Seconds until the next grace of a pod on its way out runs out (a node check when none is ahead: a pod a
        finalizer keeps is looked at that often, not in a loop)."""
        times = [*self.leaving.deletion_times, *(r.expected_gone for r in self.pods if r.expected_gone is not None)]
        ahead = [t - mono for t in times if t > mono]
        return min(ahead) + self.options.poll_min if ahead else self.options.node_check_seconds

    def _wait_for_budgets(self, budgets: set[Key], wait: float, keep_open: float) -> None:
        """Wait on the budgets for this drain's turn; the watch stays open for the rest of the pass (``keep_open``
        seconds), so the next wait reads on from it without a request (``close_watches`` when the drain ends)."""
        resume, started = self.budgets.resume, self.clock.mono()
        ended = wait_for_budget(
            self.kube,
            budgets,
            wait,
            hold_off=self._hold_off,
            check=self._look_waiting,
            check_every=self.options.node_check_seconds,
            resume=self.budgets.resume,
            keep_open=keep_open,
            falls=self.turns.falls,
            lag=self.turns.lag,
            clock=self.clock,
        )
        if budgets and wait > 0:  # else it returned at once, reading nothing
            self.turns.watched(started, ended.at, read_on=resume is not None and resume.read_on(budgets))
        self.budgets.ended(ended)

    def _hold_off(self, key: Key, allowed: int) -> float:
        """This drain's hold-off at a rise of ``key`` allowing ``allowed`` (engine/budget_turns.py)."""
        self._recount_if_due(key)
        return self.turns.hold_off(key, allowed, self.options)

    def _look_waiting(self) -> None:
        """The node still there? (NodeGone when not); a look during a wait watches the node from then on."""
        self.view.look(self.options, waiting=True)

    def close_watches(self) -> None:
        """End the watches waits left open for the next ones (budgets, the node): the drain is over."""
        self.budgets.close()
        self.view.close()
        early = self.leaving.take_early(None)
        if early is not None:
            early.close()


def wait_for_deletions(
    kube: Kube,
    node: str,
    since: str,
    uids: set[str],
    timeout: float,
    *,
    check: Callable[[], None] | None = None,
    check_every: float = 5.0,
    quiet_until: float | None = None,
    clock: Clock = CLOCK,
    watch: Watch | None = None,
) -> PodsWatched:
    """Block until every pod in ``uids`` has been deleted from ``node`` (watched from the LIST at ``since``), or
    ``timeout`` seconds pass. One request however many pods go and however long they take. ``check`` runs every
    ``check_every`` seconds meanwhile; what it raises ends it. With ``quiet_until`` (monotonic), once all went (or
    with no ``uids``, from the start) it watches on until then: the late look watches a drained node for pods bound
    after its cordon, and a watch that saw none arrive (GONE) stands for a LIST at its end.
    ``watch``: one already reading from ``since``, taken over (and closed)."""
    left, known = set(uids), set(uids)
    if (not left and quiet_until is None) or timeout <= 0:
        return PodsWatched.ENDED  # nothing watched: only a LIST says what is on the node
    end = clock.mono() + timeout
    quiet = min(end, quiet_until) if quiet_until is not None else None
    watch = watch or watch_node_pods(kube, node, since, timeout)
    next_check = clock.mono() + check_every
    seen = False
    try:
        while True:
            now = clock.mono()
            if not left and (quiet is None or now >= quiet):
                return PodsWatched.GONE
            if now >= end:
                return PodsWatched.ENDED if left else PodsWatched.GONE
            if check is not None and now >= next_check:
                check()
                next_check = clock.mono() + check_every
            wake = end if left or quiet is None else quiet
            event = watch.next(min(wake, next_check if check is not None else wake) - now)
            if event is False:
                continue
            if event is None:
                if not seen and watch.status == HTTPStatus.FORBIDDEN:
                    return PodsWatched.FORBIDDEN
                # cut (an apiserver restart) or not served yet (429 while a restarted apiserver's cache fills):
                # the next pass lists again, after a moment so that a refusing apiserver is not asked in a loop
                if not seen and (left or quiet is not None):
                    clock.sleep(max(0.0, min(end - clock.mono(), 1.0)))
                return PodsWatched.ENDED
            assert isinstance(event, dict)
            seen = True
            kind = event.get("type")
            if kind == "ERROR":  # the version is gone (410): the next pass lists afresh
                return PodsWatched.ENDED
            uid = str(((event.get("object") or {}).get("metadata") or {}).get("uid", ""))
            if kind == "DELETED":
                left.discard(uid)
            elif kind == "ADDED" and uid not in known:
                return PodsWatched.ARRIVED
    finally:
        watch.close()

"""The wait on budgets: a PDB-refused pod is retried at this drain's turn at its budget, watched, instead of after a
fixed sleep; drains sharing a budget take its rises in turn (engine/budget_turns.py), not all at once.

``wait_for_budget`` reads the budgets' LIST and watch (kube/pdb_watch.py) and ends at a turn, a timeout, or a budget
gone; ``BudgetWatch`` is what the drain keeps of the last wait: the budgets as it ended (for the pass right after it)
and its open watch (for the next wait). Times are monotonic (engine/clock.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from drain_orchestrator.drain.turns import Key, TurnLag
from drain_orchestrator.engine.budget_turns import Turns
from drain_orchestrator.engine.clock import CLOCK, Clock
from drain_orchestrator.kube.pdb_watch import (
    STREAM_MAX_SECONDS,
    BudgetStream,
    allowed_of,
    budgets_path,
    key_of,
    list_and_watch_path,
    list_path,
)
from drain_orchestrator.kube.rest import Kube

# a wait on budgets hands what it watched to the pass right after it (no LIST of its own)
BUDGETS_FRESH_SECONDS = 2.0
# longest wait on budgets without a pass (the node is still checked every node_check_seconds meanwhile): a pod
# deleted by someone else, or bound to the node, while its budget stays shut is seen within this time
BUDGET_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class Budgets:
    """What a wait on budgets ended with: (namespace, name) → ``disruptionsAllowed`` of those whose turn came (the
    others 0), and where the next wait may go on watching without a LIST: its open watch, else its version."""

    allowed: dict[Key, int]
    at: float
    seen: dict[Key, int] = field(default_factory=dict)  # every watched budget as last seen
    rv: str | None = None  # the watch's last resourceVersion (None: the next wait lists again)
    stream: BudgetStream | None = field(default=None, compare=False, repr=False)
    rose_at: float | None = None  # a watched budget was last seen rising to allowing (it is moving)

    def read_on(self, keys: set[Key]) -> bool:
        """A wait on ``keys`` after this one reads on from where it ended (its version, its open watch): it misses no
        change of them in between."""
        return self.rv is not None and keys <= self.seen.keys()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


class BudgetWatch:
    """What the drain keeps of its waits on budgets. Invariant: ``last`` is used once, by the pass right after the
    wait (the evictions it admits change the budgets); ``resume`` is the open watch the drain closes when it ends."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.last: Budgets | None = None  # the budgets as the last wait on them ended
        self.resume: Budgets | None = None  # where the next wait on budgets resumes its watch (no LIST)
        self.rose_at: float | None = None  # a budget waited on last rose (others take turns; this drain's comes)

    def turn_came(self) -> bool:
        """The wait that just ended was a turn: a budget allowing, watched a moment ago."""
        seen = self.last
        if seen is None or self.clock.mono() - seen.at > BUDGETS_FRESH_SECONDS:
            return False
        return any(n > 0 for n in seen.allowed.values())

    def allowing(self) -> dict[Key, int]:
        """What the budgets allow as the wait that just ended watched them (its hold-off over, they still allowed);
        used once. A pass that did not follow such a wait (a pod went, a timer ran out) retries no budget-bound pod:
        it would race every other drain waiting on the budget, where the wait takes the budget's rises in turn."""
        seen, self.last = self.last, None
        if seen is None or self.clock.mono() - seen.at > BUDGETS_FRESH_SECONDS:
            return {}
        return {k: n for k, n in seen.allowed.items() if n > 0}

    def ended(self, budgets: Budgets) -> None:
        self.last = self.resume = budgets
        if budgets.rose_at is not None:
            self.rose_at = budgets.rose_at

    def listed(self, seen: dict[Key, int], rv: str | None, stream: BudgetStream | None = None) -> None:
        """The budgets as a LIST showed them: the next wait watches on from it, without a LIST of its own (from
        ``stream``, the watch that came with the LIST, without a request at all)."""
        if self.resume is not None:
            self.resume.close()
        self.resume = Budgets({}, self.clock.mono(), seen, rv, stream)

    def close(self) -> None:
        if self.resume is not None:
            self.resume.close()


def wait_for_budget(
    kube: Kube,
    pdbs: Iterable[Key],
    timeout: float,
    *,
    hold_off: Callable[[Key, int], float] | None = None,
    check: Callable[[], None] | None = None,
    check_every: float = 5.0,
    resume: Budgets | None = None,
    keep_open: float = 0.0,
    falls: dict[Key, int] | None = None,
    lag: TurnLag | None = None,
    clock: Clock = CLOCK,
) -> Budgets:
    """Block until one of ``pdbs`` allows a disruption (or disappears), or ``timeout`` seconds pass: the budgets whose
    turn came (the others as allowing nothing; none on a timeout or when the watch cannot be used).

    ``hold_off``: drawn for a budget when it rises (with what it allows), how long it must keep allowing before it is
    this drain's turn. Drains sharing a budget draw different hold-offs and keep watching meanwhile: the first whose
    turn comes takes the disruption, the others see the budget fall back to 0 and wait on without a request, instead
    of all evicting at the rise and all but one being refused. ``check`` runs every ``check_every`` seconds meanwhile
    (the node still there?); what it raises ends the wait. ``resume``: the last wait's answer; its watch goes on from
    there (no LIST; no request at all while the watch it left open still runs) unless that version is gone (410),
    then it lists again. ``keep_open``: seconds the caller may come back for another wait; the watch is opened for
    that long and handed back open with a turn or a timeout (the caller closes the last answer). ``falls``: counts
    the disruptions each budget gave (Turns), so the caller can tell how many drains may still want it. ``lag``: every
    budget the watch shows (waited on or not) with when its event arrived, to time the caller's evictions."""
    keys = set(pdbs)
    now = clock.mono()
    if not keys or timeout <= 0:
        return Budgets({}, now)
    end = now + timeout
    path = budgets_path({ns for ns, _ in keys})
    turns = Turns(hold_off, falls, lag, clock)
    resumed = resume is not None and resume.read_on(keys)
    stream = resume.stream if resume is not None else None
    if stream is not None and not (resumed and stream.usable(path)):
        stream.close()
        stream = None
    if resume is not None and resumed:
        rv: str | None = resume.rv
        for key in keys:
            turns.see(key, resume.seen[key])
    else:
        # the LIST and the watch from it in one request where the apiserver streams lists
        streamed = list_and_watch_path(kube, path, max(end - now, min(keep_open, STREAM_MAX_SECONDS)))
        if streamed is not None:
            items, rv, stream = streamed
        else:
            listed = list_path(kube, path)
            if listed is None:
                return Budgets({}, clock.mono())
            items, rv = listed
        if lag is not None:
            lag.restart()
        for pdb in items:
            key = key_of(pdb)
            if lag is not None:
                lag.level(key, allowed_of(pdb))
            if key in keys:
                turns.see(key, allowed_of(pdb))
        if keys - turns.allowed.keys():  # a budget was deleted: the next eviction may go through
            if stream is not None:
                stream.close()
            return Budgets(dict(turns.allowed), clock.mono(), dict(turns.allowed))
    left = end - clock.mono()
    if left <= 0:
        if stream is not None:
            stream.close()
        return Budgets({}, clock.mono(), dict(turns.allowed), rv)
    if stream is None:
        stream = BudgetStream.open(kube, path, rv, max(left, min(keep_open, STREAM_MAX_SECONDS)))
    watch = stream.watch
    handed_back = False
    next_check = clock.mono() + check_every
    try:
        while True:
            # what is already there first (a watch handed back queued the events of the pass in between), then
            # decide on the budgets as they are now
            event = watch.next(0.0)
            if event is False:
                now, turn = clock.mono(), turns.next
                if turn is not None and now >= turn:
                    handed_back = True
                    return Budgets(turns.due(now), now, dict(turns.allowed), rv, stream, turns.rose_at)
                if now >= end:
                    handed_back = True
                    return Budgets({}, now, dict(turns.allowed), rv, stream, turns.rose_at)
                if check is not None and now >= next_check:
                    check()
                    next_check = clock.mono() + check_every
                until = min(end, turn if turn is not None else end, next_check if check is not None else end)
                event = watch.next(until - now)
                if event is False:
                    continue
            if event is None:
                # the watch ended early (its time ran out, or a restart cut it): the pass after this one lists again,
                # after a moment so that a refusing apiserver is not asked in a loop. A turn is not waited for blind:
                # drawn for what the budget allowed, it is only as good as the watch that moves it with the budget
                now, turn = clock.mono(), turns.next
                clock.sleep(max(0.0, min(end - now, 1.0, turn - now if turn is not None else 1.0)))
                now = clock.mono()
                if turn is not None and now >= turn:
                    return Budgets(turns.due(now), now, dict(turns.allowed), None, rose_at=turns.rose_at)
                return Budgets({}, now)
            assert isinstance(event, dict)
            obj = event.get("object") or {}
            if event.get("type") == "ERROR":  # the version is gone (410): list again, within the same wait
                watch.close()
                return wait_for_budget(
                    kube,
                    keys,
                    end - clock.mono(),
                    hold_off=hold_off,
                    check=check,
                    check_every=check_every,
                    keep_open=keep_open,
                    falls=falls,
                    lag=lag,
                    clock=clock,
                )
            rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
            key = key_of(obj)
            if lag is not None and event.get("type") == "MODIFIED":
                lag.seen(key, allowed_of(obj), watch.received)
            if key not in keys:
                continue
            if event.get("type") == "DELETED":
                turns.allowed.pop(key, None)
                return Budgets(dict(turns.allowed), clock.mono())
            turns.see(key, allowed_of(obj))
    finally:
        if not handed_back:
            watch.close()

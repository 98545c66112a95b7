"""Retry a PDB-blocked eviction as soon as its budget can allow it, instead of sleeping a fixed 5 s.

The disruption controller raises ``status.disruptionsAllowed`` when a replacement pod becomes Ready; a
watch on PodDisruptionBudgets wakes the drain at that moment. One LIST + one WATCH per wait keeps the
request count flat however long the wait is; drains sharing a budget take its rises in turn (a hold-off each,
watched), not all at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from drain_orchestrator.drain.plan import turn_at_level
from drain_orchestrator.drain.turn_lag import TurnLag
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.watch import Watch


def _path(namespaces: set[str]) -> str:
    if len(namespaces) == 1:
        return f"/apis/policy/v1/namespaces/{next(iter(namespaces))}/poddisruptionbudgets"
    return "/apis/policy/v1/poddisruptionbudgets"


def _allowed(pdb: dict[str, Any]) -> int:
    return int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)


def _allows(pdb: dict[str, Any]) -> bool:
    return _allowed(pdb) > 0


Key = tuple[str, str]  # (namespace, name)
STREAM_MAX_SECONDS = 600.0  # longest a watch is kept open for waits to come (a pass is shorter)


@dataclass
class BudgetStream:
    """A watch of budgets left open after a wait, for the drain's next wait to read on (no request of its own); the
    events of the pass in between wait in its queue. The drain closes it when it ends."""

    path: str
    watch: Watch
    until: float  # monotonic: when the server ends it (its timeoutSeconds)

    def usable(self, path: str) -> bool:
        return self.path == path and not self.watch.ended and time.monotonic() < self.until - 1

    def close(self) -> None:
        self.watch.close()


@dataclass(frozen=True)
class Budgets:
    """What a wait on budgets ended with: (namespace, name) → ``disruptionsAllowed`` of those whose turn came (the
    others 0), and where the next wait may go on watching without a LIST: its open watch, else its version."""

    allowed: dict[Key, int]
    at: float  # monotonic
    seen: dict[Key, int] = field(default_factory=dict)  # every watched budget as last seen
    rv: str | None = None  # the watch's last resourceVersion (None: the next wait lists again)
    stream: BudgetStream | None = field(default=None, compare=False, repr=False)
    rose_at: float | None = None  # monotonic: a watched budget was last seen rising to allowing (it is moving)

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


class Turns:
    """Each watched budget's turn: when it rose (to allowing), a hold-off drawn for it (given what the budget allows);
    gone when it falls back, nearer or further as it allows more or less meanwhile (drain/plan.py turn_at_level).
    ``falls``: each budget's disruptions taken (by any drain) as this watch saw them, added to across waits."""

    def __init__(
        self,
        hold_off: Callable[[Key, int], float] | None,
        falls: dict[Key, int] | None = None,
        lag: TurnLag | None = None,
    ) -> None:
        self.allowed: dict[Key, int] = {}
        self._turn: dict[Key, float] = {}  # monotonic: this drain's turn at the budget's latest rise
        self._measured: dict[Key, bool] = {}  # whether that turn was drawn from a lag the drain measured
        self._hold_off = hold_off
        self._falls = falls
        self._lag = lag
        self.rose_at: float | None = None

    def see(self, key: Key, allowed: int) -> None:
        before = self.allowed.get(key)
        if allowed > 0 and (before or 0) <= 0:
            self.rose_at = time.monotonic()
        if self._falls is not None and before is not None and allowed < before:
            self._falls[key] = self._falls.get(key, 0) + before - allowed
        self.allowed[key] = allowed
        if allowed <= 0:
            self._turn.pop(key, None)  # another drain took the rise first, or it fell back: wait for the next
        elif key not in self._turn:
            self._measured[key] = self._lag is None or self._lag.lag is not None
            self._turn[key] = time.monotonic() + (self._hold_off(key, allowed) if self._hold_off is not None else 0.0)
        elif before is not None and before != allowed:
            measured = self._measured.get(key, True)
            self._turn[key] = turn_at_level(self._turn[key], time.monotonic(), before, allowed, measured=measured)

    @property
    def next(self) -> float | None:
        return min(self._turn.values(), default=None)

    def taken(self, now: float, rv: str | None) -> Budgets:
        """The budgets whose turn has come, as allowing; every other one as allowing nothing (not yet this drain's)."""
        due = {k: (n if self._turn.get(k, now + 1) <= now else 0) for k, n in self.allowed.items()}
        return Budgets(due, now, dict(self.allowed), rv, rose_at=self.rose_at)


def list_budgets(kube: Kube, namespaces: set[str]) -> tuple[list[dict[str, Any]], str | None] | None:
    """The budgets of ``namespaces`` (one LIST: of the namespace, or of all when several) and the LIST's
    resourceVersion, where a wait on them may start its watch; None when the LIST fails."""
    resp = kube.request("GET", _path(namespaces))
    if not resp.ok:
        return None
    items = [p for p in resp.body.get("items") or [] if (p.get("metadata") or {}).get("namespace") in namespaces]
    return items, (resp.body.get("metadata") or {}).get("resourceVersion")


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
) -> Budgets:
    """Block until one of ``pdbs`` allows a disruption (or disappears), or ``timeout`` seconds pass: the budgets whose
    turn came (the others as allowing nothing; none on a timeout or when the watch cannot be used).

    ``hold_off``: drawn for a budget when it rises (with what it allows), how long it must keep allowing before it is
    this drain's turn.
    Drains sharing a budget draw different hold-offs and keep watching meanwhile: the first whose turn comes takes
    the disruption, the others see the budget fall back to 0 and wait on without a request, instead of all evicting
    at the rise and all but one being refused. ``check`` runs every ``check_every`` seconds meanwhile (the node
    still there?); what it raises ends the wait. ``resume``: the last wait's answer; its watch goes on from there
    (no LIST; no request at all while the watch it left open still runs) unless that version is gone (410), then
    it lists again. ``keep_open``: seconds the caller may come back for another wait; the watch is opened for that
    long and handed back open with a turn or a timeout (the caller closes the last answer). ``falls``: counts the
    disruptions each budget gave (Turns), so the caller can tell how many drains may still want it. ``lag``: every
    budget the watch shows (waited on or not) with when its event arrived, to time the caller's evictions."""
    keys = set(pdbs)
    now = time.monotonic()
    if not keys or timeout <= 0:
        return Budgets({}, now)
    end = now + timeout
    path = _path({ns for ns, _ in keys})
    turns = Turns(hold_off, falls, lag)
    resumed = resume is not None and resume.rv is not None and keys <= resume.seen.keys()
    stream = resume.stream if resume is not None else None
    if stream is not None and not (resumed and stream.usable(path)):
        stream.close()
        stream = None
    if resume is not None and resumed:
        rv: str | None = resume.rv
        for key in keys:
            turns.see(key, resume.seen[key])
    else:
        listed = kube.request("GET", path)
        if not listed.ok:
            return Budgets({}, time.monotonic())
        if lag is not None:
            lag.restart()
        for pdb in listed.body.get("items") or []:
            meta = pdb.get("metadata") or {}
            key = (meta.get("namespace", ""), meta.get("name", ""))
            if lag is not None:
                lag.level(key, _allowed(pdb))
            if key in keys:
                turns.see(key, _allowed(pdb))
        if keys - turns.allowed.keys():  # a budget was deleted: the next eviction may go through
            return Budgets(dict(turns.allowed), time.monotonic(), dict(turns.allowed))
        rv = (listed.body.get("metadata") or {}).get("resourceVersion")
    left = end - time.monotonic()
    if left <= 0:
        if stream is not None:
            stream.close()
        return Budgets({}, time.monotonic(), dict(turns.allowed), rv)
    if stream is None:
        keep = max(left, min(keep_open, STREAM_MAX_SECONDS))
        query = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": max(1, math.ceil(keep))}
        stream = BudgetStream(path, Watch(kube, path, query, timeout=keep + 5), time.monotonic() + keep)
    watch = stream.watch
    handed_back = False
    next_check = time.monotonic() + check_every
    try:
        while True:
            # what is already there first (a watch handed back queued the events of the pass in between), then
            # decide on the budgets as they are now
            event = watch.next(0.0)
            if event is False:
                now, turn = time.monotonic(), turns.next
                if turn is not None and now >= turn:
                    handed_back = True
                    return replace(turns.taken(now, rv), stream=stream)
                if now >= end:
                    handed_back = True
                    return Budgets({}, now, dict(turns.allowed), rv, stream, turns.rose_at)
                if check is not None and now >= next_check:
                    check()
                    next_check = time.monotonic() + check_every
                until = min(end, turn if turn is not None else end, next_check if check is not None else end)
                event = watch.next(until - now)
                if event is False:
                    continue
            if event is None:
                # the watch ended early (its time ran out, or a restart cut it): the pass after this one lists again,
                # after a moment so that a refusing apiserver is not asked in a loop. A turn is not waited for blind:
                # drawn for what the budget allowed, it is only as good as the watch that moves it with the budget
                now, turn = time.monotonic(), turns.next
                time.sleep(max(0.0, min(end - now, 1.0, turn - now if turn is not None else 1.0)))
                now = time.monotonic()
                return turns.taken(now, None) if turn is not None and now >= turn else Budgets({}, now)
            assert isinstance(event, dict)
            obj = event.get("object") or {}
            meta = obj.get("metadata") or {}
            if event.get("type") == "ERROR":  # the version is gone (410): list again, within the same wait
                watch.close()
                left = end - time.monotonic()
                return wait_for_budget(
                    kube,
                    keys,
                    left,
                    hold_off=hold_off,
                    check=check,
                    check_every=check_every,
                    keep_open=keep_open,
                    falls=falls,
                    lag=lag,
                )
            rv = meta.get("resourceVersion") or rv
            key = (meta.get("namespace", ""), meta.get("name", ""))
            if lag is not None and event.get("type") == "MODIFIED":
                lag.seen(key, _allowed(obj), watch.received)
            if key not in keys:
                continue
            if event.get("type") == "DELETED":
                turns.allowed.pop(key, None)
                return Budgets(dict(turns.allowed), time.monotonic())
            turns.see(key, _allowed(obj))
    finally:
        if not handed_back:
            watch.close()

"""The first wave in turn (drain/first_wave.py says which pods): before a drain's first evictions, when other nodes
are being drained too (cordoned, their drain claim held and without a verdict), its pods under a budget too small
for all of them wait on it as if refused once, and go at their turn (engine/pass_state.py: the budget's watch, a
hold-off as wide as the contention). Costs two LISTs a drain (the draining nodes, metadata only; the budgets, which
the first wait then watches without listing again), and a drain with turns one more a moment later (the draining
nodes again, at a budget's first rise: a storm's drains cordon over a second or two), against a refusal for most
pods of a storm."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial

from drain_orchestrator.drain.classify import PodVerdict
from drain_orchestrator.drain.first_wave import contention_of, first_wave_turns
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.drain.plan import force_delete_at
from drain_orchestrator.drain.report import HeldPod
from drain_orchestrator.drain_claim import NodeClaim
from drain_orchestrator.engine.pass_state import DrainState
from drain_orchestrator.engine.pod_record import ident_of
from drain_orchestrator.kube.evict import HoldReason
from drain_orchestrator.kube.node_claim import ANN_DRAINER
from drain_orchestrator.kube.node_lookup import count_cordoned
from drain_orchestrator.kube.pdb_watch import Budgets, list_budgets
from drain_orchestrator.kube.rest import Kube

# the first wave is the evictions right after the cordon; a pass long after it (a held drain looking again after a
# durable wait) does not read the budgets for it again
FIRST_WAVE_SECONDS = 60.0
# a storm's drains cordon over a second or two (their events arrive apart, their containers start apart): a count
# taken by one of the first is short of the storm, and its turns would be spread over too few drains; counted again
# at the first rise of one of its budgets that comes this long after the first count
RECOUNT_AFTER_SECONDS = 1.0


def _draining(now: float, annotations: Mapping[str, str]) -> bool:
    """A drain is under way on the node: its drain claim is held, not expired, and has no verdict yet (a node only
    cordoned, for a rebalance recommendation, or one whose drain is over, takes no disruption)."""
    claim = NodeClaim.from_json(annotations.get(ANN_DRAINER))
    return claim is not None and claim.verdict is None and claim.expires > now


def hold_first_wave(
    kube: Kube, state: DrainState, candidates: list[PodVerdict], options: DrainOptions, say: Callable[[str], None]
) -> None:
    """Once per drain, before its first evictions: put the pods that should wait for their turn on their budget."""
    if state.first_wave_read or options.dry_run or not candidates:
        return
    state.first_wave_read = True
    if state.cordoned_at is not None and time.time() - state.cordoned_at > FIRST_WAVE_SECONDS:
        return
    draining = count_cordoned(kube, partial(_draining, time.time()))
    state.draining_seen = draining
    if draining is None or draining < 2:
        return  # alone (or not known): evict at once, as a drain alone is never refused by a rival
    listed = list_budgets(kube, {v.pod.namespace for v in candidates})
    if listed is None:
        return
    items, rv = listed
    pods = [(ident_of(v.pod), v.pod.namespace, v.pod.labels) for v in candidates]
    turns = first_wave_turns(pods, items, draining)
    seen = {
        ((p.get("metadata") or {}).get("namespace", ""), (p.get("metadata") or {}).get("name", "")): int(
            (p.get("status") or {}).get("disruptionsAllowed") or 0
        )
        for p in items
    }
    # the first wait on these budgets resumes from this LIST: no LIST of its own
    if state.budget_watch is not None:
        state.budget_watch.close()
    state.budget_watch = Budgets({}, time.monotonic(), seen, rv)
    if turns:
        state.first_wave_contention = contention_of(draining)
        expected = {
            ((p.get("metadata") or {}).get("namespace", ""), (p.get("metadata") or {}).get("name", "")): int(
                (p.get("status") or {}).get("expectedPods") or draining
            )
            for p in items
        }
        keys = {(t.namespace, t.budget) for t in turns.values()}
        for key in keys:
            state.turn_contenders[key] = min(draining, expected.get(key, draining))
        pods_of = {k: expected[k] for k in keys if k in expected}
        state.turn_recount = partial(_recount, kube, state, draining, pods_of, time.monotonic())
    now, mono = time.time(), time.monotonic()
    for v in candidates:
        turn = turns.get(ident_of(v.pod))
        if turn is None:
            continue
        rec = state.record(ident_of(v.pod))
        message = (
            f"waiting for its turn at PodDisruptionBudget {turn.budget}: {turn.allowed} disruptions allowed, "
            f"{draining} nodes draining"
        )
        rec.pdbs, rec.waiting_on, rec.last_block = [turn.budget], [(turn.namespace, turn.budget)], message
        rec.last_hold = HeldPod(pod=v.pod.key, reason=HoldReason.PDB.value, message=message, pdbs=[turn.budget])
        due = force_delete_at(v.pod.termination_grace_period, options.deadline, options.deadline_margin)
        if options.force_delete_on_deadline and due is not None:
            rec.force_at = mono + (due - now)
    if turns:
        say(f"{len(turns)} pods wait for their turn at their budgets ({draining} nodes draining)")


def _recount(
    kube: Kube, state: DrainState, counted: int, pods_of: Mapping[tuple[str, str], int], counted_at: float
) -> None:
    """Once, RECOUNT_AFTER_SECONDS or more after the first wave's count: count the draining nodes again (one
    metadata-only LIST) and widen the turns of the budgets by the drains that started since. Never narrows them:
    a drain over since then is already taken off by the falls its budgets' watch saw."""
    if time.monotonic() - counted_at < RECOUNT_AFTER_SECONDS:
        return
    state.turn_recount = None
    draining = count_cordoned(kube, partial(_draining, time.time()))
    if draining is None or draining <= counted:
        return
    for key, n in state.turn_contenders.items():
        state.turn_contenders[key] = max(n, min(draining, pods_of.get(key, draining)))
    state.first_wave_contention += contention_of(draining) - contention_of(counted)

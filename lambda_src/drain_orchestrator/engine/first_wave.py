"""The first wave in turn (drain/turns.py first_wave_turns says which pods): before a drain's first evictions, when
other nodes are being drained too (cordoned, their drain claim held and without a verdict), its pods under a budget
too small for all of them wait on it as if refused once, and go at their turn (engine/budget_wait.py: the budget's
watch, a hold-off as wide as the drains wanting it). Costs two LISTs a drain (the draining nodes, metadata only; the
budgets, which the first wait then watches without listing again: from the watch that came with the LIST, where the
apiserver streams lists), and a drain with turns one more a moment later
(the draining nodes again, at a budget's first rise: a storm's drains cordon over a second or two), against a
refusal for most pods of a storm. A drain with turns watches its node's pods from its first LIST at once: the passes
at its turns read them from that watch, and its wait for them to go reads on from it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drain_orchestrator.drain.classify import PodVerdict
from drain_orchestrator.drain.plan import force_delete_at
from drain_orchestrator.drain.report import HeldPod
from drain_orchestrator.drain.turns import first_wave_turns
from drain_orchestrator.drain_claim import NodeClaim
from drain_orchestrator.engine.parts import DrainParts
from drain_orchestrator.engine.pod_record import ident_of
from drain_orchestrator.kube.evict import HoldReason
from drain_orchestrator.kube.node_claim import ANN_DRAINER
from drain_orchestrator.kube.node_lookup import cordoned_annotations
from drain_orchestrator.kube.pdb_watch import STREAM_MAX_SECONDS, allowed_of, key_of, list_budgets
from drain_orchestrator.kube.rest import Kube

# the first wave is the evictions right after the cordon; a pass long after it (a held drain looking again after a
# durable wait) does not read the budgets for it again, unless it comes back from a wait for a far turn
# (drain/turn_queue.py): the storm is still on, and its pods wait for their turns as the first wave's did
FIRST_WAVE_SECONDS = 60.0


def draining(annotations: Mapping[str, str], now: float) -> bool:
    """A drain is under way on the node: its drain claim is held, not expired, and has no verdict yet (a node only
    cordoned, for a rebalance recommendation, or one whose drain is over, takes no disruption)."""
    claim = NodeClaim.from_json(annotations.get(ANN_DRAINER))
    return claim is not None and claim.verdict is None and claim.expires > now


def budget_capacity(pdb: Mapping[str, Any]) -> int:
    """The disruptions a listed budget allows with all its pods healthy (expected less desired healthy), at least 1:
    what its rises give at most, however little it allows at the moment it is listed."""
    status = pdb.get("status") or {}
    return max(1, int(status.get("expectedPods") or 0) - int(status.get("desiredHealthy") or 0))


def count_draining(kube: Kube, now: float) -> int | None:
    """Nodes being drained now (one metadata-only LIST of the cordoned nodes); None when the LIST fails."""
    cordoned = cordoned_annotations(kube)
    return None if cordoned is None else sum(1 for a in cordoned if draining(a, now))


class FirstWave(DrainParts):
    def _hold_first_wave(self, candidates: list[PodVerdict]) -> None:
        """Once per drain, before its first evictions: put the pods that should wait for their turn on their budget."""
        turns, options = self.turns, self.options
        if turns.first_wave_read or options.dry_run or not candidates:
            return
        turns.first_wave_read = True
        cordoned_at = self.view.cordoned_at
        late = cordoned_at is not None and self.clock.mono() - cordoned_at > FIRST_WAVE_SECONDS
        if late and not options.after_queued:
            return
        count = turns.draining_seen = count_draining(self.kube, self.clock.wall())
        if count is None or count < 2:
            return  # alone (or not known): evict at once, as a drain alone is never refused by a rival
        listed = list_budgets(self.kube, {v.pod.namespace for v in candidates}, keep=STREAM_MAX_SECONDS)
        if listed is None:
            return
        items = listed.items
        waiting = first_wave_turns([(ident_of(v.pod), v.pod.namespace, v.pod.labels) for v in candidates], items, count)
        # the first wait watches on from here: from the watch that came with the LIST, else from its version
        self.budgets.listed({key_of(p): allowed_of(p) for p in items}, listed.resource_version, listed.stream)
        if waiting:
            expected = {key_of(p): int((p.get("status") or {}).get("expectedPods") or count) for p in items}
            keys = {(t.namespace, t.budget) for t in waiting.values()}
            turns.first_wave(count, expected, keys, {key_of(p): budget_capacity(p) for p in items})
        now, mono = self.clock.wall(), self.clock.mono()
        for v in candidates:
            turn = waiting.get(ident_of(v.pod))
            if turn is None:
                continue
            rec = self.pods.record(ident_of(v.pod))
            message = (
                f"waiting for its turn at PodDisruptionBudget {turn.budget}: {turn.allowed} disruptions allowed, "
                f"{count} nodes draining"
            )
            rec.pdbs, rec.waiting_on, rec.last_block = [turn.budget], [(turn.namespace, turn.budget)], message
            rec.last_hold = HeldPod(pod=v.pod.key, reason=HoldReason.PDB.value, message=message, pdbs=[turn.budget])
            due = force_delete_at(v.pod.termination_grace_period, options.deadline, options.deadline_margin)
            if options.force_delete_on_deadline and due is not None:
                rec.force_at = mono + (due - now)
        if waiting:
            self.say(f"{len(waiting)} pods wait for their turn at their budgets ({count} nodes draining)")
            # their turns come within the first wave's window: the passes at them read the node's pods from this
            # watch, not from a LIST each, and the wait for the pods to go reads on from it (the one watch it needs)
            self.leaving.watch_early(self.kube, self.node, self.view.pods_version)

    def _recount_if_due(self, key: tuple[str, str]) -> None:
        """Once, at a rise of one of the first wave's budgets a moment after the first count: count the draining
        nodes again (one metadata-only LIST), as a storm's drains cordon over a second or two."""
        if self.turns.recount_due(key):
            self.turns.recounted(count_draining(self.kube, self.clock.wall()))

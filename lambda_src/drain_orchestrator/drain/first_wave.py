"""Which pods' first eviction waits for a turn at their budget, in a storm (pure).

Every drain of a storm evicting all its pods at once is refused for most of them: 50 drains each sending one pod
of a budget that allows 5 cost 45 refusals before anyone waits. A pod selected by exactly one budget that allows
fewer disruptions than there are nodes draining (each may want one) waits on that budget from the start instead,
as if it had been refused once, and goes at its turn. A budget with room for every draining node, a drain alone,
and a pod under several budgets (the eviction API never evicts it) are left as they were: evicted at once."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drain_orchestrator.drain.selector import selecting


@dataclass(frozen=True)
class Turn:
    namespace: str
    budget: str
    allowed: int  # the budget's disruptionsAllowed as listed


def first_wave_turns(
    pods: Sequence[tuple[str, str, Mapping[str, str]]], pdbs: Sequence[Mapping[str, Any]], draining: int
) -> dict[str, Turn]:
    """``pods``: (identity, namespace, labels) of the pods about to be evicted; ``pdbs``: the budgets of their
    namespaces as listed; ``draining``: nodes being drained now, this one included. Identity → its budget, for the
    pods that wait for a turn."""
    if draining < 2:
        return {}
    allowed = {
        ((p.get("metadata") or {}).get("namespace", ""), (p.get("metadata") or {}).get("name", "")): int(
            (p.get("status") or {}).get("disruptionsAllowed") or 0
        )
        for p in pdbs
    }
    out = {}
    for ident, namespace, labels in pods:
        names = selecting(list(pdbs), namespace, labels)
        if len(names) != 1:
            continue
        n = allowed.get((namespace, names[0]), 0)
        if n < draining:
            out[ident] = Turn(namespace, names[0], n)
    return out


def contention_of(draining: int, per_slot: float = 1.0) -> int:
    """The races-lost count whose hold-off window (drain/plan.py contention_jitter: slot * 2^(n-1)) spans one slot
    per ``per_slot`` draining nodes (drain/plan.py turns_per_slot), so that the drains' turns at a budget fall
    apart: no more within a slot than the budget admits."""
    return 1 + math.ceil(math.log2(max(1, math.ceil(max(1, draining) / per_slot))))

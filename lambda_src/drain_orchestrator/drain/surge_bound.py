"""How many replicas surge before evict may add to one Deployment (pure): never past the Deployment's own
rollout's ``maxSurge`` (a scale of a workload whose pods may not run beside each other, ``Recreate``, adds none),
nor past SURGE_MAX_REPLICAS, counted over every node's surge in place: a storm of drains adds no more than one
rollout of the Deployment would."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from drain_orchestrator.drain.surge import DeploymentFacts, HpaFacts

_COUNT = re.compile(r"[0-9]{1,9}")
DEFAULT_MAX_SURGE = "25%"  # the Deployment API's default
_PERCENT = re.compile(r"([0-9]{1,9})%")


def max_surge_of(dep: DeploymentFacts, replicas: int) -> int:
    """The extra pods the Deployment's own rollout may run beside ``replicas``: its RollingUpdate ``maxSurge``, a
    percentage rounded up as the Deployment controller resolves it; none for ``Recreate`` (its pods must never run
    beside each other). A value that cannot be read allows none: surging is an offer, not a duty."""
    if dep.strategy == "Recreate":
        return 0
    raw = DEFAULT_MAX_SURGE if dep.max_surge is None else dep.max_surge
    if isinstance(raw, int) and not isinstance(raw, bool):
        return max(0, raw)
    text = str(raw)
    if _COUNT.fullmatch(text):
        return int(text)
    m = _PERCENT.fullmatch(text)
    return math.ceil(int(m.group(1)) * replicas / 100) if m else 0


def surge_room(dep: DeploymentFacts, hpa: HpaFacts | None, node: str, limit: int | None) -> tuple[int, int, str]:
    """How many replicas this node's drain may still add to the Deployment, the most all drains together may, and
    what sets that most: SURGE_MAX_REPLICAS (``limit``) or the Deployment's maxSurge, counted over every node's
    surge in place (so a storm of drains adds no more than one rollout would)."""
    holders = hpa.holders if hpa is not None else dep.holders
    others = sum(h.count for n, h in holders.items() if n != node)
    base = max(0, dep.replicas - sum(h.count for h in holders.values()))
    own = max_surge_of(dep, base)
    most, why = own, f"its {'Recreate strategy' if dep.strategy == 'Recreate' else 'maxSurge'} allows {own}"
    if limit is not None and limit < own:
        most, why = limit, f"SURGE_MAX_REPLICAS is {limit}"
    return max(0, most - others), most, why

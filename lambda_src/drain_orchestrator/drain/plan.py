"""Order and timing of a drain: eviction tiers, grace clipping to a deadline, retry backoff. Pure. (The turns at a
budget: drain/turns.py.)"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from enum import IntEnum

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict


class Tier(IntEnum):
    """A pod's eviction tier, modelled on graceful node shutdown and Karpenter: workloads first, then the
    system-critical pods they may depend on (DNS, CNI helpers), then DaemonSet pods (only with evict_daemonsets).
    A tier goes only once every earlier one is gone. Reports store it as its number."""

    WORKLOAD = 0
    CRITICAL = 1  # priorityClassName system-cluster-critical / system-node-critical
    DAEMONSET = 2
    CRITICAL_DAEMONSET = 3


MIN_GRACE_SECONDS = 1  # 0 removes the pod object at once, before the kubelet has stopped its containers


def tier_of(pod: PodInfo) -> Tier:
    ds = pod.daemonset_name is not None and not pod.is_terminal
    if ds:
        return Tier.CRITICAL_DAEMONSET if pod.is_critical else Tier.DAEMONSET
    return Tier.CRITICAL if pod.is_critical else Tier.WORKLOAD


def _to_remove(verdicts: Iterable[PodVerdict]) -> list[PodVerdict]:
    """The pods a stage waits for: to remove or already going. Pods held by their drain policy (HOLD) hold back no
    stage: a Job left to finish must not keep every later pod on the node."""
    return [v for v in verdicts if v.verdict in (Verdict.EVICT, Verdict.WAIT)]


def active_tier(verdicts: Iterable[PodVerdict]) -> Tier | None:
    """The lowest tier that still has pods to remove or wait for; later tiers wait until it is empty."""
    tiers = [tier_of(v.pod) for v in _to_remove(verdicts)]
    return min(tiers) if tiers else None


def active_orders(verdicts: Iterable[PodVerdict]) -> dict[str, int]:
    """Per namespace, the earliest ``evict-order`` of the active tier that still has pods to remove or wait for.

    An evict-order is a namespace user's annotation, so it orders that namespace's pods only: one namespace's pod
    with a low order that a budget holds never holds another namespace's pods (they go at their own order)."""
    removing = _to_remove(verdicts)
    tier = active_tier(removing)
    out: dict[str, int] = {}
    for v in removing:
        if tier_of(v.pod) == tier:
            ns = v.pod.namespace
            out[ns] = min(out.get(ns, v.order), v.order)
    return out


def to_evict_now(verdicts: Sequence[PodVerdict]) -> list[PodVerdict]:
    """The EVICT verdicts of the active tier at their namespace's active order; an empty list while a refusal
    blocks the drain (kubectl)."""
    if any(v.verdict is Verdict.REFUSE for v in verdicts):
        return []
    tier, orders = active_tier(verdicts), active_orders(verdicts)
    return [
        v
        for v in verdicts
        if v.verdict is Verdict.EVICT and tier_of(v.pod) == tier and v.order == orders.get(v.pod.namespace)
    ]


def waiting_for_order(verdicts: Sequence[PodVerdict]) -> dict[str, list[PodVerdict]]:
    """Per namespace, the EVICT verdicts of the active tier that wait for an earlier evict-order of their namespace."""
    tier, orders = active_tier(verdicts), active_orders(verdicts)
    out: dict[str, list[PodVerdict]] = {}
    for v in verdicts:
        ns = v.pod.namespace
        if v.verdict is Verdict.EVICT and tier_of(v.pod) == tier and v.order > orders.get(ns, v.order):
            out.setdefault(ns, []).append(v)
    return out


def grace_for(
    pod_grace: int | None,
    option_grace: int | None,
    now: float,
    deadline: float | None,
    margin: float,
    *,
    keeps_name: bool = False,
) -> int | None:
    """Grace period to send with the eviction/delete; None leaves the pod's own value untouched.

    With a deadline the pod must be gone by ``deadline - margin``: the grace is clipped to the time left. Never
    below 1 s where it protects: with 0 the apiserver removes the pod object at once while its containers may still
    run, so a grace the drain chooses (asked for, clipped to the deadline) is at least 1 s, and so is that of a pod
    whose name outlives it (``keeps_name``: a StatefulSet's, whose successor of the same name could start beside
    its containers). A pod's own 0 is otherwise left as it is, as kubectl and Karpenter leave it: its replacement
    has a name of its own.
    """
    wanted = option_grace if option_grace is not None else pod_grace
    if wanted is not None and wanted < MIN_GRACE_SECONDS and (option_grace is not None or keeps_name):
        wanted = MIN_GRACE_SECONDS
    if deadline is None:
        return wanted if wanted != pod_grace else None
    left = math.floor(deadline - margin - now)
    if wanted is None:
        wanted = 30  # the API default terminationGracePeriodSeconds
    if wanted <= left:
        return wanted if wanted != pod_grace else None
    return max(MIN_GRACE_SECONDS, left)


def force_delete_at(pod_grace: int | None, deadline: float | None, margin: float) -> float | None:
    """When a pod still refused by its PDB must be deleted to be gone by the deadline (None: never).

    Like Karpenter's terminationGracePeriod: ``deadline - margin - grace``, one second earlier so that the
    whole grace period still fits when the delete is sent.
    """
    if deadline is None:
        return None
    grace = 30 if pod_grace is None else pod_grace
    return deadline - margin - max(grace, MIN_GRACE_SECONDS) - 1


def force_delete_due(pod_grace: int | None, now: float, deadline: float | None, margin: float) -> bool:
    at = force_delete_at(pod_grace, deadline, margin)
    return at is not None and now >= at


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with "equal jitter": uniform(c/2, c) with c = min(cap, base·2^attempt).

    Half the delay is fixed so a retry never comes back instantly; the random half spreads concurrent drains.
    """
    r = rng or random
    ceiling = min(cap, base * (2 ** max(0, attempt)))
    return r.uniform(ceiling / 2, ceiling)


def next_poll(
    now: float, pending_deletion_times: Iterable[float], interval: float, poll_min: float, poll_max: float
) -> float:
    """Seconds until the next LIST while waiting for terminating pods.

    A terminating pod's deletionTimestamp is when its grace period runs out, so most pods go just before
    it: poll fast around the earliest such time, back off (up to poll_max) in between.
    """
    times = [t for t in pending_deletion_times if t > now]
    step = min(poll_max, max(poll_min, interval))
    if times:
        until = min(times) - now
        if until > step:
            return step
        return max(poll_min, until)
    return step

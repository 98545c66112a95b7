"""Tiers, grace clipping to a deadline, force-delete timing, backoff and poll cadence; the budget turns' hold-offs,
slots and shares (drain/turns.py)."""

from __future__ import annotations

import random
from typing import Any

from drain_orchestrator.drain.classify import PodInfo, PodVerdict, Verdict
from drain_orchestrator.drain.plan import (
    Tier,
    active_tier,
    backoff_delay,
    force_delete_at,
    force_delete_due,
    grace_for,
    next_poll,
    tier_of,
    to_evict_now,
)
from drain_orchestrator.drain.turns import (
    budget_share,
    contention_jitter,
    contention_of,
    turn_at_level,
    turn_hold_off,
    turns_per_slot,
)


def pod(name: str, *, ds: bool = False, critical: bool = False, deleting: bool = False) -> PodInfo:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": name,
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet" if ds else "ReplicaSet",
                "name": "o",
                "controller": True,
            }
        ],
    }
    if deleting:
        meta["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    spec = {"priorityClassName": "system-cluster-critical"} if critical else {}
    return PodInfo.from_dict({"metadata": meta, "spec": spec, "status": {"phase": "Running"}})


def test_tiers() -> None:
    assert tier_of(pod("a")) is Tier.WORKLOAD
    assert tier_of(pod("b", critical=True)) is Tier.CRITICAL
    assert tier_of(pod("c", ds=True)) is Tier.DAEMONSET
    assert tier_of(pod("d", ds=True, critical=True)) is Tier.CRITICAL_DAEMONSET
    assert [int(t) for t in sorted(Tier)] == [0, 1, 2, 3]  # the numbers reports have always stored


def test_critical_pods_wait_until_workloads_are_gone() -> None:
    work, crit = pod("w"), pod("c", critical=True)
    vs = [PodVerdict(work, Verdict.EVICT), PodVerdict(crit, Verdict.EVICT)]
    assert [v.pod.name for v in to_evict_now(vs)] == ["w"]
    # a workload pod still terminating holds the critical tier back
    vs = [PodVerdict(pod("w", deleting=True), Verdict.WAIT), PodVerdict(crit, Verdict.EVICT)]
    assert to_evict_now(vs) == [] and active_tier(vs) is Tier.WORKLOAD
    vs = [PodVerdict(crit, Verdict.EVICT), PodVerdict(pod("x", ds=True), Verdict.EVICT)]
    assert [v.pod.name for v in to_evict_now(vs)] == ["c"]


def test_skipped_pods_do_not_hold_tiers() -> None:
    vs = [PodVerdict(pod("w"), Verdict.SKIP), PodVerdict(pod("c", critical=True), Verdict.EVICT)]
    assert [v.pod.name for v in to_evict_now(vs)] == ["c"]


def test_a_refusal_blocks_every_eviction_like_kubectl() -> None:
    vs = [PodVerdict(pod("w"), Verdict.EVICT), PodVerdict(pod("bad"), Verdict.REFUSE, "no controller")]
    assert to_evict_now(vs) == []


def test_grace_without_deadline_is_the_option_or_the_pods_own() -> None:
    assert grace_for(30, None, 0.0, None, 2.0) is None
    assert grace_for(30, 5, 0.0, None, 2.0) == 5


def test_grace_clipped_to_the_time_left_before_the_deadline() -> None:
    now = 1000.0
    # a 2-minute Spot window: a 300 s grace must shrink to what is left minus the margin
    assert grace_for(300, None, now, now + 120, 2.0) == 118
    # a pod that fits keeps its own value (None = not sent)
    assert grace_for(30, None, now, now + 120, 2.0) is None
    assert grace_for(None, None, now, now + 20, 2.0) == 18  # unspecified = API default 30 s
    assert grace_for(300, 60, now, now + 120, 2.0) == 60


def test_grace_never_below_one_second() -> None:
    assert grace_for(30, None, 1000.0, 1000.5, 2.0) == 1
    assert grace_for(30, None, 1000.0, 900.0, 2.0) == 1


def test_force_delete_due_leaves_the_pod_its_whole_grace_before_the_deadline() -> None:
    deadline = 1000.0
    assert force_delete_at(10, deadline, 2.0) == 987.0  # deadline - margin - grace - 1 s of slack
    assert not force_delete_due(10, 980.0, deadline, 2.0)
    assert force_delete_due(10, 987.0, deadline, 2.0)
    # and at that moment the pod's own grace still fits, so it is not clipped
    assert grace_for(10, None, 987.0, deadline, 2.0) is None
    assert force_delete_at(0, deadline, 2.0) == 996.0  # at least 1 s of grace
    assert force_delete_at(None, deadline, 2.0) == 967.0  # API default 30 s
    assert not force_delete_due(10, 1e12, None, 2.0)


def test_backoff_grows_is_capped_and_jittered() -> None:
    rng = random.Random(7)
    delays = [backoff_delay(a, 0.25, 5.0, rng) for a in range(10)]
    assert 0.125 <= delays[0] <= 0.25
    assert all(d <= 5.0 for d in delays)
    assert delays[8] >= 2.5
    assert len({round(d, 6) for d in delays}) == len(delays)


def test_next_poll_waits_for_the_earliest_grace_expiry_then_polls_fast() -> None:
    now = 100.0
    assert next_poll(now, [110.0], 0.2, 0.2, 1.0) == 0.2  # interval grows separately
    assert next_poll(now, [110.0], 5.0, 0.2, 1.0) == 1.0  # capped at poll_max
    assert next_poll(now, [100.5], 5.0, 0.2, 1.0) == 0.5  # wake up right when the grace runs out
    assert next_poll(now, [], 0.5, 0.2, 1.0) == 0.5


def test_budget_share_retries_at_most_what_each_budget_allows() -> None:
    web, db = ("ns", "web"), ("ns", "db")
    blocked = [("w1", [web]), ("w2", [web]), ("w3", [web]), ("d1", [db]), ("d2", [db])]
    assert budget_share(blocked, {web: 2, db: 1}) == ["w1", "w2", "d1"]
    assert budget_share(blocked, {web: 5}) == ["w1", "w2", "w3"]  # a budget at 0 is absent from the LIST
    assert budget_share(blocked, {}) == []


def test_budget_share_needs_every_budget_of_a_pod_and_a_named_one() -> None:
    a, b = ("ns", "a"), ("ns", "b")
    assert budget_share([("p", [a, b]), ("q", [b])], {a: 1, b: 1}) == ["p"]  # p took b's only disruption
    assert budget_share([("p", [a, b])], {a: 3}) == []
    assert budget_share([("p", [])], {a: 1}) == []  # no PDB named: the timed backoff applies instead


def test_contention_jitter_is_zero_alone_then_grows_and_is_capped() -> None:
    rng = random.Random(3)
    assert contention_jitter(0, 0.2, 3.0, rng) == 0.0  # a drain alone retries at once
    first = [contention_jitter(1, 0.2, 3.0, rng) for _ in range(200)]
    later = [contention_jitter(4, 0.2, 3.0, rng) for _ in range(200)]
    capped = [contention_jitter(40, 0.2, 3.0, rng) for _ in range(200)]
    assert all(0 <= x <= 0.2 for x in first)
    assert all(0 <= x <= 1.6 for x in later) and max(later) > 0.8
    assert all(0 <= x <= 3.0 for x in capped) and max(capped) > 2.0
    assert len({round(x, 6) for x in first}) > 150  # spread, not one instant


def test_turns_of_many_drains_spread_past_a_lost_races_cap() -> None:
    rng = random.Random(5)
    wanting = contention_of(50)  # 50 drains want the budget: 64 slots
    turns = [turn_hold_off(0, wanting, 0.3, 10.0, 30.0, rng) for _ in range(2000)]
    assert max(turns) > 15.0 and all(0 <= x <= 0.3 * 64 for x in turns)  # one slot a drain, not squeezed into 10 s
    wider = [turn_hold_off(0, contention_of(200), 0.3, 10.0, 30.0, rng) for _ in range(2000)]
    assert max(wider) <= 30.0 and max(wider) > 25.0
    lost = [turn_hold_off(9, 1, 0.3, 10.0, 30.0, rng) for _ in range(2000)]  # a backoff after lost races
    assert max(lost) <= 10.0 and max(lost) > 8.0
    assert turn_hold_off(0, 1, 0.3, 10.0, 30.0, rng) <= 0.3  # one drain wanting it: within one slot


def test_a_budget_admitting_several_at_once_gives_turns_nearer_keeping_one_for_the_lag() -> None:
    # three quarters of all but one a slot, at least half a turn
    assert [turns_per_slot(n) for n in (0, 1, 2, 3, 5)] == [0.5, 0.5, 0.75, 1.5, 3]
    assert turns_per_slot(5, measured=False) == turns_per_slot(1, measured=False) == 1  # a guessed slot: one
    rng = random.Random(7)
    one = [turn_hold_off(0, contention_of(40, turns_per_slot(1)), 0.3, 10.0, 30.0, rng) for _ in range(2000)]
    five = [turn_hold_off(0, contention_of(40, turns_per_slot(5)), 0.3, 10.0, 30.0, rng) for _ in range(2000)]
    assert max(one) > 25.0 and all(x <= 0.3 * 16 for x in five)  # 40 drains: 2 slots each at 1; 3 a slot at 5
    assert contention_of(3, turns_per_slot(5)) == contention_of(1) == 1  # room for every drain: within one slot
    assert contention_of(1, turns_per_slot(1)) == 2  # one drain at a budget allowing one: within two slots


def test_a_turn_not_come_moves_with_what_the_budget_allows() -> None:
    assert turn_at_level(110.0, 100.0, 5, 2) == 140.0  # fell from 5 to 2: a slot holds 0.75 turns, not 3
    assert turn_at_level(110.0, 100.0, 2, 3) == 105.0  # rose from 2 to 3: a slot holds 1.5, not 0.75
    assert turn_at_level(110.0, 100.0, 2, 1) == 115.0  # fell to 1: half a turn a slot
    assert turn_at_level(90.0, 100.0, 5, 1) == 90.0  # come already: stays come
    assert turn_at_level(110.0, 100.0, 0, 1) == 110.0  # no level to scale from
    # drawn before the drain measured its lag: one turn a slot at every level, so the level moving leaves it be
    assert turn_at_level(110.0, 100.0, 5, 2, measured=False) == 110.0


def test_a_grace_of_zero_is_raised_to_one_second_where_it_protects() -> None:
    # asked for (--grace-period 0), or a StatefulSet pod's own 0: the pod object would go before its containers stop,
    # and a successor of the same name could start beside them
    assert grace_for(30, 0, 0.0, None, 2.0) == 1
    assert grace_for(0, None, 0.0, None, 2.0, keeps_name=True) == 1
    assert grace_for(0, None, 1000.0, 2000.0, 2.0, keeps_name=True) == 1
    assert grace_for(30, None, 1000.0, 1000.5, 2.0) == 1  # clipped to the deadline: the drain's choice
    # another pod's own 0 is left as it is, as kubectl and Karpenter leave it: its replacement has a name of its own
    assert grace_for(0, None, 0.0, None, 2.0) is None
    assert grace_for(0, None, 1000.0, 2000.0, 2.0) is None
    assert grace_for(1, None, 0.0, None, 2.0) is None  # the pod's own 1 s is kept as is

"""PodDisruptionBudgets on the real control plane: a budget that frees up when the replacement is Ready,
one that never does (deadline, with and without the force policy), and two budgets on one pod."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from drain_orchestrator.kube.evict import MULTIPLE_PDBS
from testbed.kube import SETUP_SECONDS
from tests.integration.drain_support import (
    Lines,
    drain,
    drainer,
    pod_lists_of,
    pods_on,
    ready_pods_on,
    set_unschedulable,
)

pytestmark = pytest.mark.integration


def _web_on(k8s: Any, target: str, spare: str, replicas: int, *, grace: int = 0) -> None:
    k8s.deployment_on("web", replicas, [target], spare, grace=grace)


def test_pdb_blocks_until_the_replacement_is_ready(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    _web_on(k8s, a, b, 3)
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)
    lines = Lines()
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=90, progress=lines)
    assert report.drained, report
    assert len(report.evicted) == 3
    # refusals (usually two of the three concurrent evictions) name the budget; on a loaded machine the
    # apiserver's ordering can let the replacements become Ready first, so their count is not asserted
    refused = lines.matching("error when evicting")
    assert all("web" in line for line in refused)
    assert pods_on(k8s, a) == []
    # the drain ends when the last evicted pod is gone; its replacement is created and made Ready after that,
    # by the ReplicaSet controller and the scheduler, so it is waited for rather than expected at once
    k8s.wait_for(
        lambda: len(ready_pods_on(k8s, [b], "app=web")) == 3,
        timeout=SETUP_SECONDS,
        what="3 Ready web pods on the spare",
    )
    assert lines.lines[0] == f"node/{a} cordoned" and lines.lines[-1] == f"node/{a} drained"


def test_pdb_never_satisfied_stops_at_the_deadline_without_force(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 2, grace=5)
    k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, min_available=2)
    k8s.wait_pdb("web", disruptions_allowed=0)
    with drainer(testbed) as kube:
        start = time.time()
        report = drain(kube, a, timeout=60, deadline=start + 6)
    assert not report.drained
    assert 5 <= time.time() - start < 12
    assert "deadline reached" in report.warnings
    assert {b.pod for b in report.blocked} == {f"{k8s.ns}/{p.metadata.name}" for p in pods_on(k8s, a)}
    assert all(b.pdbs == ["web"] and "needs 2 healthy pods" in b.message for b in report.blocked)
    assert report.forced == []
    assert len([p for p in pods_on(k8s, a) if p.metadata.deletion_timestamp is None]) == 2


def test_pdb_never_satisfied_is_forced_before_the_deadline_with_force(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 2, grace=5)
    k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, min_available=2)
    k8s.wait_pdb("web", disruptions_allowed=0)
    with drainer(testbed) as kube:
        start = time.time()
        deadline = start + 14
        report = drain(kube, a, timeout=60, deadline=deadline, force_delete_on_deadline=True)
        finished = time.time()
    assert report.drained, report
    assert finished <= deadline
    assert len(report.forced) == 2 and report.evicted == []
    for f in report.forced:
        # deleted no earlier than deadline - margin - grace - 1 s, with the pod's whole 5 s grace
        assert f.grace_seconds == 5 and "web" in f.reason and "before the deadline" in f.reason
    assert finished - start >= 14 - 2 - 5 - 1


def test_two_pdbs_on_one_pod_are_reported_not_evicted(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 1)
    k8s.wait_pods_ready("app=web", 1)
    k8s.pdb("web-1", {"app": "web"}, max_unavailable=1)
    k8s.pdb("web-2", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web-1", disruptions_allowed=1)
    k8s.wait_pdb("web-2", disruptions_allowed=1)
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=3)
    assert not report.drained
    assert [b.message for b in report.blocked] == [MULTIPLE_PDBS]
    assert "timed out" in report.warnings
    assert len(pods_on(k8s, a)) == 1


def test_blocked_pod_is_retried_as_soon_as_the_budget_allows_not_after_a_fixed_sleep(testbed: Any, k8s: Any) -> None:
    a, b = k8s.add_nodes(2)
    set_unschedulable(k8s, b, True)
    k8s.deployment("web", 2)
    k8s.wait_pods_ready("app=web", 2)
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)
    lines = Lines()
    done: dict[str, Any] = {}
    evictions: list[float] = []

    def progress(line: str) -> None:
        lines(line)
        if line.startswith("evicting pod"):
            evictions.append(time.monotonic())

    def run() -> None:
        with drainer(testbed) as kube:
            done["report"] = drain(kube, a, timeout=60, progress=progress)  # type: ignore[arg-type]

    t = threading.Thread(target=run)
    t.start()
    # the first replacement cannot be scheduled yet, so the second pod's eviction is refused
    k8s.wait_for(lambda: lines.matching("error when evicting"), what="a PDB refusal")
    opened = time.monotonic()
    set_unschedulable(k8s, b, False)
    t.join(60)
    report = done["report"]
    assert report.drained and len(report.evicted) == 2
    # kubectl sleeps 5 s after a refusal; we retry when the PDB watch shows the replacement Ready (the drain
    # itself ends later, once a LIST finds the node drained)
    assert evictions[-1] - opened < 4.5, evictions[-1] - opened


def test_api_call_cap_stops_a_drain_that_cannot_progress(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.deployment("web", 1)
    k8s.wait_pods_ready("app=web", 1)
    k8s.pdb("web", {"app": "web"}, min_available=1)
    k8s.wait_pdb("web", disruptions_allowed=0)
    with drainer(testbed) as kube:
        report = drain(kube, a, timeout=120, max_api_calls=8)
    assert not report.drained
    assert "stopped: API call cap of 8 reached" in report.warnings
    # what is in flight finishes: a wait on the budget (its LIST and watch, a node check every 5 s for up to 30 s)
    # or a pass (LIST, one eviction)
    assert 8 <= report.api_calls <= 8 + 8
    assert report.elapsed < 90  # stopped by the cap, not by the timeout


def test_terminating_pod_whose_grace_ends_after_the_deadline_is_shortened_with_force(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.bare_pod("slow", node=a, grace=300)
    k8s.wait_for(lambda: any(k8s.pod_ready(p) for p in pods_on(k8s, a)), what="pod ready")
    k8s.core.delete_namespaced_pod("slow", k8s.ns)  # someone else started a 300 s graceful deletion
    with drainer(testbed) as kube:
        waiting = drain(kube, a, timeout=2, force=True, deadline=time.time() + 60)
        assert waiting.terminating == [f"{k8s.ns}/slow"] and waiting.forced == []
        deadline = time.time() + 8
        report = drain(kube, a, timeout=30, force=True, deadline=deadline, force_delete_on_deadline=True)
        assert time.time() <= deadline
    assert report.drained, report
    assert [f.pod for f in report.forced] == [f"{k8s.ns}/slow"]
    assert 1 <= report.forced[0].grace_seconds <= 6


def test_pods_a_budget_admits_one_by_one_are_evicted_from_the_last_list_not_listed_at_each_turn(
    testbed: Any, k8s: Any
) -> None:
    from drain_orchestrator.engine.node_view import TURN_LISTING_SECONDS

    a, b = k8s.add_nodes(2)
    _web_on(k8s, a, b, 4)
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)
    # the spare node takes replacements only once the first wave has been refused: on a busy machine a Ready
    # replacement could otherwise reopen the budget between the concurrent evictions and admit them all at once
    set_unschedulable(k8s, b, True)
    sent: list[float] = []

    def progress(line: str) -> None:
        if line.startswith("evicting pod"):
            sent.append(time.monotonic())
        elif line.startswith("error when evicting") and k8s.core.read_node(b).spec.unschedulable:
            set_unschedulable(k8s, b, False)

    with drainer(testbed) as kube:
        lists = pod_lists_of(kube)
        report = drain(kube, a, timeout=90, progress=progress)  # type: ignore[arg-type]
    assert report.drained and len(report.evicted) == 4, report
    assert pods_on(k8s, a) == []
    # the first pass sends all four (one goes, three are refused); the budget then admits them one turn at a time,
    # and each turn's pass evicts from the first LIST (while younger than TURN_LISTING_SECONDS), not listing again
    assert len(sent) > 4, "no pod waited for a turn of the budget"
    between = [t for t in lists if sent[0] < t < sent[-1] and t - lists[0] < TURN_LISTING_SECONDS]
    assert between == [], [round(t - lists[0], 2) for t in lists]


def test_a_turn_s_evictions_sent_after_the_witness_and_watched_go_need_no_final_list(testbed: Any, k8s: Any) -> None:
    """The first pass lists the node before the control plane has the cordon (its witness comes a moment later). The
    budget refuses the second pod; seconds later its turn evicts it from that LIST, long after the witness, and the
    watch sees it go: that stands for a LIST sent after the witness, so the drain ends without listing again."""
    from drain_orchestrator.engine.node_view import TURN_LISTING_SECONDS

    a, b = k8s.add_nodes(2)
    _web_on(k8s, a, b, 2)
    k8s.pdb("web", {"app": "web"}, max_unavailable=1)
    k8s.wait_pdb("web", disruptions_allowed=1)
    set_unschedulable(k8s, b, True)  # no replacement until the second pod was refused: its eviction waits for a turn
    refused: list[float] = []

    def progress(line: str) -> None:
        if line.startswith("error when evicting") and not refused:
            refused.append(time.monotonic())
            set_unschedulable(k8s, b, False)

    with drainer(testbed) as kube:
        lists = pod_lists_of(kube)
        report = drain(kube, a, timeout=60, progress=progress)  # type: ignore[arg-type]
    assert report.drained and len(report.evicted) == 2, report
    assert refused, "the budget refused no eviction: nothing waited for a turn"
    assert pods_on(k8s, a) == []
    ended = time.monotonic()
    assert ended - lists[0] < TURN_LISTING_SECONDS, "the turn came too late to evict from the first LIST"
    assert len(lists) == 1, [round(t - lists[0], 2) for t in lists]

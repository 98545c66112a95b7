"""Cordon/uncordon on the real apiserver, as the product's RBAC identity: idempotent, marks the node."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from drain_orchestrator.drain_claim import Ask, NodeClaim, Role
from drain_orchestrator.kube.cordon import (
    ANN_DEADLINE,
    ANN_EVENT_ID,
    ANN_REASON,
    ANN_STARTED_AT,
    cordon,
    uncordon,
)
from drain_orchestrator.kube.node_claim import ANN_DRAINER, settle_claim
from drain_orchestrator.kube.node_records import claim
from tests.integration.drain_support import drainer

pytestmark = pytest.mark.integration

EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"


def ours_and_others(node: Any) -> list[str]:
    """The node's taints but the node lifecycle controller's (node.kubernetes.io/unschedulable follows the cordon
    on its own time)."""
    return [t.key for t in node.spec.taints or [] if not t.key.startswith("node.kubernetes.io/")]


def test_cordon_marks_the_node_once_and_uncordon_removes_only_our_marks(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    k8s.core.patch_node(a, {"spec": {"taints": [{"key": "other", "value": "x", "effect": "NoSchedule"}]}})
    with drainer(testbed) as kube:
        first = cordon(
            kube,
            a,
            reason="spot-interruption",
            event_id="ev-1",
            deadline=1_900_000_000.0,
            taint=("drain-orchestrator.io/draining", "NoSchedule"),
            exclude_from_load_balancers=True,
            now=1_899_999_880.0,
        )
        second = cordon(kube, a, reason="asg-terminate", event_id="ev-2", now=1_899_999_999.0)
        node = k8s.core.read_node(a)
        assert (first.changed, second.changed) == (True, False)
        assert node.spec.unschedulable is True
        ann = node.metadata.annotations
        # the first drain's marks stay: a second drain of the same node does not overwrite them
        assert ann[ANN_REASON] == "spot-interruption" and ann[ANN_EVENT_ID] == "ev-1"
        assert ann[ANN_STARTED_AT] == "2030-03-17T17:44:40Z" and ann[ANN_DEADLINE] == "2030-03-17T17:46:40Z"
        assert node.metadata.labels[EXCLUDE_LB] == "drain-orchestrator"
        assert sorted(ours_and_others(node)) == ["drain-orchestrator.io/draining", "other"]

        assert uncordon(kube, a, taint_key="drain-orchestrator.io/draining").changed
        assert not uncordon(kube, a, taint_key="drain-orchestrator.io/draining").changed
    node = k8s.core.read_node(a)
    assert not node.spec.unschedulable
    assert not any(k.startswith("drain-orchestrator.io/") for k in node.metadata.annotations or {})
    assert EXCLUDE_LB not in (node.metadata.labels or {})
    assert ours_and_others(node) == ["other"]


def test_dry_run_cordon_changes_nothing(testbed: Any, k8s: Any) -> None:
    (a,) = k8s.add_nodes(1)
    with drainer(testbed) as kube:
        assert cordon(kube, a, reason="x", dry_run=True).changed
    node = k8s.core.read_node(a)
    assert not node.spec.unschedulable
    assert "drain-orchestrator.io/reason" not in (node.metadata.annotations or {})


def test_cordon_takes_the_phase_claims_in_its_own_write_and_of_racing_drains_one_holds_each(
    testbed: Any, k8s: Any
) -> None:
    (a,) = k8s.add_nodes(1)
    with drainer(testbed) as kube:
        calls0 = kube.calls
        first = cordon(kube, a, now=1_899_999_880.0, claims={"cordoned": "run-1", "drain-started": "run-1"})
        assert kube.calls - calls0 == 2  # one GET, one PATCH: cordon and both claims together
        again = cordon(kube, a, now=1_899_999_990.0, claims={"cordoned": "run-1", "drain-started": "run-1"})
        other = cordon(kube, a, now=1_899_999_999.0, claims={"cordoned": "run-2", "drain-started": "run-2"})
    assert first.changed and first.claimed == {"cordoned", "drain-started"}
    assert not again.changed and again.claimed == {"cordoned", "drain-started"}  # a replay of the holder holds them
    assert not other.changed and other.claimed == frozenset()
    ann = k8s.core.read_node(a).metadata.annotations
    assert ann["drain-orchestrator.io/cordoned"] == ann["drain-orchestrator.io/drain-started"] == "run-1"

    (b,) = k8s.add_nodes(1)
    results: dict[str, Any] = {}
    gate = threading.Barrier(4)

    def run(owner: str) -> None:
        with drainer(testbed) as kube:
            gate.wait()
            results[owner] = cordon(kube, b, now=1_899_999_880.0, claims={"cordoned": owner, "drain-started": owner})

    threads = [threading.Thread(target=run, args=(f"run-{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    holders = [o for o, r in results.items() if r.claimed]
    assert len(results) == 4 and len(holders) == 1, results  # the resourceVersion makes one writer win
    assert results[holders[0]].claimed == {"cordoned", "drain-started"}
    assert k8s.core.read_node(b).metadata.annotations["drain-orchestrator.io/cordoned"] == holders[0]


def test_cordon_takes_the_drain_claim_in_its_own_write_and_a_second_drain_joins_it_as_a_waiter(
    testbed: Any, k8s: Any
) -> None:
    (a,) = k8s.add_nodes(1)
    now = 1_899_999_880.0
    with drainer(testbed) as kube:
        calls0 = kube.calls
        first = cordon(kube, a, now=now, claims={"cordoned": "run-1"}, drain_claim=Ask("run-1", now + 600, now, 300))
        assert kube.calls - calls0 == 2  # one GET, one PATCH: cordon, phase claim and drain claim together
        calls1 = kube.calls
        replay = cordon(kube, a, now=now + 1, drain_claim=Ask("run-1", now + 600, now + 1, 300))
        assert kube.calls - calls1 <= 1  # the holder's replay writes nothing (a GET at most, if the view aged)
        other = cordon(kube, a, now=now + 2, drain_claim=Ask("run-2", now + 300, now + 2, 300))
    assert first.drain_claim is not None and first.drain_claim.role is Role.HOLDER
    assert replay.drain_claim is not None and replay.drain_claim.role is Role.HOLDER
    assert other.drain_claim is not None and other.drain_claim.role is Role.WAITER
    stored = NodeClaim.from_json(k8s.core.read_node(a).metadata.annotations[ANN_DRAINER])
    assert stored is not None and stored.holder == "run-1"
    assert stored.deadlines == {"run-1": now + 600, "run-2": now + 300}  # the waiter's deadline, for the holder
    assert stored.expires == now + 300


def test_the_holders_settle_takes_the_report_phase_claim_in_its_write_and_a_changed_result_gives_it_back(
    testbed: Any, k8s: Any
) -> None:
    (a, b) = k8s.add_nodes(2)
    now = 1_899_999_880.0
    ann = "drain-orchestrator.io/"
    with drainer(testbed) as kube:
        cordon(kube, a, now=now, drain_claim=Ask("run-1", now + 600, now, 300))
        cordon(kube, a, now=now + 1, drain_claim=Ask("run-2", now + 300, now + 1, 300))
        calls0 = kube.calls
        settled = settle_claim(kube, a, "run-1", "drained", "drain-completed")
        assert kube.calls - calls0 == 1  # from the cordon's view: one PATCH, verdict and phase claim together
        replay = settle_claim(kube, a, "run-1", "drained", "drain-completed")
        waiter = settle_claim(kube, a, "run-2", "drained", "drain-completed")
        # a gate held to the deadline: the report claims drain-failed and gives drain-completed back, one write
        assert claim(kube, a, "drain-failed", "run-1", release="drain-completed")
        # another execution already reported this phase on the node: the settle's write does not take it
        cordon(kube, b, now=now, drain_claim=Ask("run-3", now + 600, now, 300))
        k8s.core.patch_node(b, {"metadata": {"annotations": {ann + "drain-completed": "run-0"}}})
        late = settle_claim(kube, b, "run-3", "drained", "drain-completed")
    assert settled.claim is not None and settled.claim.verdict == "drained" and settled.phase_held
    assert replay.claim is None and replay.phase_held  # a retried step finds its own claim
    assert waiter.claim is None and not waiter.phase_held  # a waiter settles nothing and claims nothing
    stored = k8s.core.read_node(a).metadata.annotations
    assert stored.get(ann + "drain-failed") == "run-1" and ann + "drain-completed" not in stored
    assert late.claim is not None and not late.phase_held
    assert k8s.core.read_node(b).metadata.annotations[ann + "drain-completed"] == "run-0"

"""When a drain held by PDBs (or failing evictions) is said, and what the held notice says the deadline brings."""

from __future__ import annotations

from drain_orchestrator.drain.report import BlockedPod, DrainReport, HeldPod, PodReason
from drain_orchestrator.workflow.held import Held, HeldWatch, at_deadline, public_message, public_note


def _held(*reasons: str) -> DrainReport:
    return DrainReport(node="n", held=[HeldPod(f"a/p{i}", r, "m", ["web"], 429) for i, r in enumerate(reasons)])


def test_the_notice_is_due_once_after_an_unbroken_hold_of_held_notify_seconds() -> None:
    watch = HeldWatch(notify_after=600)
    assert not watch.due(_held("pdb"), now=1000.0)
    assert not watch.due(_held("pdb"), now=1599.0)
    assert watch.due(_held("pdb"), now=1600.0) and watch.since == 1000.0
    assert not watch.due(_held("pdb"), now=2500.0)  # said once


def test_a_hold_that_breaks_starts_its_clock_again() -> None:
    watch = HeldWatch(notify_after=600)
    watch.due(_held("pdb"), now=1000.0)
    assert not watch.due(DrainReport(node="n"), now=1500.0) and watch.since is None
    assert not watch.due(DrainReport(node="n", blocked=[BlockedPod("a/x", ["web"], "m")]), now=1550.0)
    assert not watch.due(_held("pdb"), now=2100.0)
    assert watch.due(_held("pdb"), now=2150.0)


def test_what_the_deadline_brings() -> None:
    assert at_deadline({"pdb", "multiple-pdbs"}, True, True, "CONTINUE") == "force-delete"
    # failing evictions are never forced: the lifecycle action's answer, or the end of the drain
    assert at_deadline({"pdb", "webhook-failed"}, True, True, "ABANDON") == "abandon"
    assert at_deadline({"pdb"}, False, True, "CONTINUE") == "continue"
    assert at_deadline({"pdb"}, False, False, "CONTINUE") == "stop"
    assert at_deadline({"gate"}, True, True, "CONTINUE") == "continue"  # a gate has no pod to force
    # drain policies stop holding by the deadline: the pods are evicted; a pod behind a held evict-order goes with it
    assert at_deadline({"do-not-disrupt", "wait-for-completion"}, False, True, "ABANDON") == "evict"
    assert at_deadline({"pdb", "evict-order", "do-not-disrupt"}, True, True, "CONTINUE") == "force-delete"
    assert at_deadline({"pdb", "evict-order"}, False, True, "CONTINUE") == "continue"


def test_a_pod_held_by_its_drain_policy_holds_the_drain_like_a_budget() -> None:
    pinned = PodReason("a/pinned", "karpenter.sh/do-not-disrupt on the pod: …", "do-not-disrupt")
    watch = HeldWatch(notify_after=600)
    assert not watch.due(DrainReport(node="n", held_by_policy=[pinned]), now=1000.0)
    assert watch.due(DrainReport(node="n", held_by_policy=[pinned]), now=1600.0) and watch.since == 1000.0


def test_what_the_node_and_its_event_say_names_no_pod_no_budget_and_no_approval_id() -> None:
    """Anyone who may read nodes reads the annotation (and the default namespace's Events): pods counted per
    namespace, never named; the approval id, a bearer token for the drain, never there."""
    held = Held(
        1000.0,
        612.4,
        ["shop/cart-7f9-x1", "shop/cart-7f9-x2", "billing/ledger-0"],
        ["cart-budget", "ledger-budget"],
        ["multiple-pdbs", "pdb"],
        "force-delete",
        5000.0,
        approval_id="c2VjcmV0",
        node="n1",
    )
    note = public_note(held)
    assert note == {
        "held_since": "1970-01-01T00:16:40Z",
        "reasons": ["multiple-pdbs", "pdb"],
        "at_deadline": "force-delete",
        "gates": [],
        "pods_per_namespace": {"billing": 1, "shop": 2},
    }
    message = public_message(held)
    assert message == (
        "held 612 s (multiple-pdbs, pdb): 1 pod in billing, 2 pods in shop; at the deadline: force-delete"
    )
    for secret in ("cart-7f9", "ledger-0", "budget", "c2VjcmV0"):
        assert secret not in str(note) and secret not in message

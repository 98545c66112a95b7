"""Which pods' first eviction waits for its turn at a budget (drain/turns.py first_wave_turns)."""

from __future__ import annotations

from typing import Any

from drain_orchestrator.drain.turns import Turn, contention_jitter, contention_of, first_wave_turns


def _pdb(name: str, allowed: int, app: str, ns: str = "ns") -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": {"selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": allowed},
    }


PODS = [("web-1", "ns", {"app": "web"}), ("api-1", "ns", {"app": "api"}), ("job-1", "ns", {"app": "job"})]


def test_a_drain_alone_evicts_at_once() -> None:
    assert first_wave_turns(PODS, [_pdb("web", 0, "web")], draining=1) == {}


def test_a_budget_without_room_for_every_draining_node_gives_turns() -> None:
    pdbs = [_pdb("web", 5, "web"), _pdb("api", 50, "api")]
    turns = first_wave_turns(PODS, pdbs, draining=50)
    # web allows 5 for 50 draining nodes: a turn; api has room for all; job has no budget
    assert turns == {"web-1": Turn("ns", "web", 5)}


def test_a_pod_under_two_budgets_or_another_namespace_is_left_alone() -> None:
    pdbs = [_pdb("web", 0, "web"), _pdb("web-too", 0, "web"), _pdb("api", 0, "api", ns="other")]
    assert first_wave_turns(PODS, pdbs, draining=10) == {}


def test_the_turn_window_spans_a_slot_per_draining_node() -> None:
    for draining in (2, 5, 50):
        window = 0.2 * 2 ** (contention_of(draining) - 1)
        assert window >= 0.2 * draining
        assert window < 0.2 * 2 * draining
        assert contention_jitter(contention_of(draining), 0.2, 100.0) <= window

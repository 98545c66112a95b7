"""When the drain's last LIST stands for the late look (workflow/late_look.py listed_late_enough): pure."""

from __future__ import annotations

from drain_orchestrator.drain.options import LATE_LOOK_SECONDS
from drain_orchestrator.workflow.late_look import listed_late_enough

CORDON = 1_000.0


def test_a_list_sent_after_the_window_and_fresh_stands_for_the_look() -> None:
    listed = CORDON + LATE_LOOK_SECONDS + 0.1
    assert listed_late_enough(listed, CORDON, listed + 0.5, gates_held=False)


def test_a_list_sent_within_the_window_does_not() -> None:
    """A binding under way when the scheduler saw the cordon may land after that LIST: the look watches for it."""
    listed = CORDON + LATE_LOOK_SECONDS - 0.1
    assert not listed_late_enough(listed, CORDON, listed + 0.5, gates_held=False)


def test_a_gate_that_held_the_instance_since_wants_a_look_after_it() -> None:
    """A pod tolerating the cordon may be bound while a load balancer drains: the look after the gates finds it."""
    listed = CORDON + 30.0
    assert not listed_late_enough(listed, CORDON, listed + 0.5, gates_held=True)


def test_a_list_grown_old_before_the_verdict_does_not() -> None:
    """The drain's verdict came from another execution's pass, or waited: what was bound since is not in it."""
    listed = CORDON + 30.0
    assert listed_late_enough(listed, CORDON, listed + LATE_LOOK_SECONDS, gates_held=False)
    assert not listed_late_enough(listed, CORDON, listed + LATE_LOOK_SECONDS + 0.1, gates_held=False)


def test_without_a_list_time_or_a_cordon_time_the_look_runs() -> None:
    """A report checkpointed before the time was recorded, a drain that did not cordon: nothing to go on."""
    assert not listed_late_enough(None, CORDON, CORDON + 10, gates_held=False)
    assert not listed_late_enough(CORDON + 10, None, CORDON + 10, gates_held=False)

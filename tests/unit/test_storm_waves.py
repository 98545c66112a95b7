"""The storm-waves benchmark's pure parts (bench/storm_waves.py): how a phase is cut into its start and its waves,
how the turn's settings are read and set for one phase only. The runs themselves are `make bench-storm-waves`; the
integration smoke test runs a small one."""

from __future__ import annotations

import argparse

import pytest
from bench import storm_waves
from bench.storm_waves import Turns

from drain_orchestrator.drain import turns
from drain_orchestrator.drain.options import DrainOptions
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.results import DrainPlan


def test_a_pod_is_counted_under_the_deployment_its_name_starts_with() -> None:
    assert storm_waves.budget_of("app3-7d55d8447d-t4s7r") == "app3"
    assert storm_waves.budget_of("my-app-c8b6689f6-nw6bm") == "my-app"


def test_each_rise_is_timed_to_the_next_eviction_of_its_own_budget() -> None:
    levels = [
        (0.0, "app0", 2),  # the first status seen is a level, not a rise
        (0.5, "app0", 0),
        (1.0, "app0", 1),  # rise: app0's next eviction is at 1.3
        (1.1, "app1", 0),
        (1.2, "app1", 1),  # rise: app1's next eviction is at 1.25 (app0's at 1.3 is not its own)
        (2.0, "app0", 1),  # same level: no rise
    ]
    evicted = {"app0-h-a": 0.1, "app0-h-b": 1.3, "app1-h-c": 1.25}
    assert storm_waves.rise_delays(levels, evicted) == pytest.approx([0.3, 0.05])


def test_an_eviction_delivered_just_before_its_rise_counts_as_answering_it_and_none_after_gives_no_delay() -> None:
    levels = [(0.0, "app0", 0), (1.0, "app0", 1), (3.0, "app0", 0), (4.0, "app0", 1)]
    evicted = {"app0-h-a": 0.99}  # the eviction's watch delivered 10 ms before the rise's
    assert storm_waves.rise_delays(levels, evicted) == [0.0]


def test_first_evictions_are_one_per_budget() -> None:
    evicted = {"app0-h-a": 0.9, "app0-h-b": 0.4, "app1-h-c": 0.7}
    assert storm_waves.first_evictions(evicted) == [0.4, 0.7]


def test_a_start_mark_is_the_median_of_the_first_request_of_its_kind_of_each_drain() -> None:
    t0 = 100.0
    requests = [
        (100.10, "get nodes"),
        (100.20, "get nodes"),
        (100.30, "get nodes"),
        (100.40, "patch nodes"),
        (109.00, "get nodes"),  # a later read of a node, past the drains' count: not a start
        (100.50, "watch pods"),  # not a start kind
    ]
    marks = storm_waves.start_marks(requests, t0, drains=3)
    assert marks == pytest.approx({"get nodes": 0.2, "patch nodes": 0.4})


def test_the_early_share_counts_the_refusals_of_the_storms_first_seconds() -> None:
    assert storm_waves.early_share([0.5, 4.9, 5.0, 20.0]) == 0.5  # two of four before 5 s
    assert storm_waves.early_share([]) is None  # no refusal: no share


def test_each_eviction_counts_at_the_level_its_budget_showed_last_before_it() -> None:
    levels = [(1.0, "app0", 2), (2.0, "app0", 1), (3.0, "app1", 1)]
    answers = [
        (0.5, "app0-h-a", 201),  # before any status of app0
        (1.5, "app0-h-b", 201),  # app0 showed 2
        (2.5, "app0-h-c", 429),  # app0 showed 1: refused there
        (3.5, "app1-h-d", 201),
    ]
    assert storm_waves.refusals_by_level(levels, answers) == {-1: [1, 0], 1: [2, 1], 2: [1, 0]}


def test_turn_settings_are_read_as_lags_times_floor_times_an_optional_share() -> None:
    assert storm_waves.parse_turns("1.5x0.1") == Turns(1.5, 0.1, turns.SLOT_SHARE)
    assert storm_waves.parse_turns("2x0.2x1") == Turns(2.0, 0.2, 1.0)
    assert Turns(turns.LAG_SLOTS, DrainOptions.budget_jitter_slot) == storm_waves.SHIPPED


@pytest.mark.parametrize("text", ["2", "2x", "x0.1", "ax0.1", "0x0.1", "2x-1", "2x0.2x0", "2x0.2x1x1"])
def test_a_malformed_turn_setting_names_the_flag_and_the_form(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"--turns must be LAGSxFLOOR"):
        storm_waves.parse_turns(text)


def _job() -> DrainJob:
    event = Interruption("asg-terminate", "e1", 0.0, "us-east-1", "1", ("i-0123456789abcdef0",), None, "x")
    decision = Decision("i-0123456789abcdef0", True, "blue", Reason.OWNED_INSTANCE_TAG, "drain", "n1")
    return DrainJob(
        event, decision, DrainPlan(deadline=1.0, completion_deadline=2.0, heartbeat_interval=None, now=0), "r"
    )


def test_turn_settings_hold_within_the_phase_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTER_NAMES", "blue")
    runtime.reset_config()
    try:
        shipped = _job().drain_options().budget_jitter_slot
        with storm_waves.turns_set(Turns(1.0, 0.05, 1.0)):
            assert turns.LAG_SLOTS == 1.0 and turns.turns_per_slot(5) == 4  # all but one a slot
            assert _job().drain_options().budget_jitter_slot == 0.05
        assert storm_waves.SHIPPED.lag_slots == turns.LAG_SLOTS and storm_waves.SHIPPED.share == turns.SLOT_SHARE
        assert _job().drain_options().budget_jitter_slot == shipped == storm_waves.SHIPPED.floor
    finally:
        runtime.reset_config()


def test_the_rounds_alternate_which_contender_goes_first_and_the_bound_goes_last_in_odd_rounds() -> None:
    a, b = Turns(2.0, 0.2, 0.75), Turns(1.0, 0.1, 1.0)
    assert [a.name, b.name] == [
        "2 lags, floor 0.2 s, 0.75 x (allowed - 1) a slot",
        "1 lags, floor 0.1 s, 1 x (allowed - 1) a slot",
    ]
    assert storm_waves.round_order(1, [a, b]) == [a.name, b.name, "bound"]
    assert storm_waves.round_order(2, [a, b]) == ["bound", b.name, a.name]

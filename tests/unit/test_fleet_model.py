"""The storm model of bench/fleet_model.py (pure): calibrated on a run it gives that run back, and a storm's drains
wait for the waves before theirs."""

from __future__ import annotations

import pytest
from bench.fleet_model import Model, Run, waves_of


def _run(requests: float, wait_s: float) -> Run:
    return Run(
        nodes=50,
        pods_per_node=2,
        solo_requests=20,
        solo_drained_s=1.0,
        requests=requests,
        wait_s=wait_s,
        billed_s=wait_s + 1,
        operations=18,
        invocations=1,
        log_bytes=4000,
        storm_s=15,
        refusals=0,
    )


def test_the_model_gives_its_calibration_run_back_and_grows_with_the_wait() -> None:
    model = Model.calibrated([_run(requests=24, wait_s=8)])
    assert model.per_wait_second == pytest.approx(0.5)
    assert model.requests(8) == pytest.approx(24) and model.requests(0) == pytest.approx(20)


def test_two_runs_split_the_extra_requests_into_a_storm_s_own_and_a_rate_while_waiting() -> None:
    model = Model.calibrated([_run(requests=23, wait_s=4), _run(requests=27, wait_s=12)])
    assert model.per_wait_second == pytest.approx(0.5) and model.in_storm == pytest.approx(1)
    assert model.requests(4) == pytest.approx(23) and model.requests(12) == pytest.approx(27)


def test_a_storm_in_one_wave_costs_each_drain_what_it_costs_alone() -> None:
    model = Model.calibrated([_run(requests=24, wait_s=8)])
    alone = model.storm(1000, waves=1, wave_s=2)
    assert alone["wait_s"] == 0 and alone["requests_per_drain"] == pytest.approx(20)
    ten = model.storm(1000, waves=10, wave_s=2)
    assert ten["wait_s"] == pytest.approx(9) and ten["requests"] == pytest.approx(1000 * (20 + 0.5 * 9))
    assert ten["operations"] == 18_000


def test_waves_follow_the_budgets_max_unavailable() -> None:
    assert waves_of("10%") == 10 and waves_of("25%") == 4 and waves_of("none") == 1

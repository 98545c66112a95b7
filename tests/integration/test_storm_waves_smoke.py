"""The storm-waves benchmark (bench/storm_waves.py) on a few nodes: the orchestrator under two turn settings and
the lower bound each drain a fleet of their own; every phase is cut into its start and its waves from the budgets'
statuses and the evictions the observer saw, and the turn settings are as shipped again afterwards."""

from __future__ import annotations

import pytest
from bench import storm_waves
from bench.storm_waves import BOUND, START_KINDS, Turns

from drain_orchestrator.drain import turns
from testbed.bed import Testbed

pytestmark = pytest.mark.integration


def test_a_small_storm_is_cut_into_start_and_waves_for_each_turn_setting_and_the_bound(
    testbed: Testbed, monkeypatch: pytest.MonkeyPatch
) -> None:
    narrow = Turns(1.0, 0.1)
    res = storm_waves.bench(
        testbed, n_nodes=3, pods_per_node=3, rounds=1, turns=(storm_waves.SHIPPED, narrow), max_unavailable="50%",
        setenv=monkeypatch.setenv,
    )  # fmt: skip

    (rnd,) = res["rounds"]
    assert rnd["order"] == [storm_waves.SHIPPED.name, narrow.name, BOUND]
    for who in rnd["order"]:
        got = rnd[who]
        assert got["storm_s"] is not None, (who, got)
        # 3 replicas a budget, 2 may go at once: the third waits for a replacement, so every budget rises again
        assert got["rises"] >= 3, (who, got)
        assert got["rise_to_eviction_mean_s"] is not None and got["rise_to_eviction_mean_s"] >= 0
        assert got["first_eviction_median_s"] is not None and 0 < got["first_eviction_median_s"] < got["storm_s"]
        assert got["last_eviction_s"] <= got["last_pod_gone_s"] <= got["storm_s"] + 0.5
    for who in (storm_waves.SHIPPED.name, narrow.name):
        got = rnd[who]
        assert got["statuses"] == {"SUCCEEDED": 3}, got
        assert set(got["start_s"]) == set(START_KINDS), got["start_s"]  # the drains' requests, from the audit log
        marks = [got["first_s"][k] for k in START_KINDS]
        assert marks == sorted(marks), got["first_s"]  # read, cordon, list, PDBs, then the first eviction
        assert got["last_hook_s"] is not None
        refused = got["refusals_s"]  # the audit log's eviction 429s, each timed within the storm
        assert len(refused) <= round(got["refusals_per_pod"] * 9) and all(0 <= t <= got["storm_s"] for t in refused)
        by_level = got["refusals_by_level"].values()  # the same evictions, each at the level its budget showed
        assert sum(sent for sent, _ in by_level) >= 9 and sum(r for _, r in by_level) == len(refused), by_level
    assert storm_waves.SHIPPED.lag_slots == turns.LAG_SLOTS
    table = storm_waves.render(res)
    assert all(f"| {who} |" in table for who in rnd["order"]), table
    assert "Evictions refused / sent" in table, table

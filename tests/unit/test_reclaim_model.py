"""The Spot reclaim model of bench/reclaim_model.py (pure): the EC2 bucket and the Lambda concurrency delay the
cordons as their sizes say, and lifting them removes the delay."""

from __future__ import annotations

from bench.reclaim_model import Calibration, simulate

AT_ONCE = float("inf")  # every execution started at the same instant: the bucket and the concurrency alone
CAL = Calibration(to_describe_s=0.2, to_cordon_s=0.3, to_drained_s=5.0, ec2_per_node=1.0, held_after_drained_s=1.0)


def test_within_the_bucket_and_the_concurrency_nothing_waits() -> None:
    s = simulate(100, (100, 20), 1000, CAL, starts_per_s=AT_ONCE)
    assert s["cordon_max"] == 0.5 and s["throttled_per_node"] == 0 and s["requeues"] == 0
    assert s["in_time"] == 100


def test_past_the_bucket_reads_of_their_own_make_the_last_cordon_wait_at_least_for_the_refill() -> None:
    s = simulate(1000, (100, 20), 1000, CAL, shared=False, starts_per_s=AT_ONCE)
    assert s["cordon_max"] >= (1000 - 100) / 20  # no faster than the bucket refills
    assert s["throttled_per_node"] > 0
    assert (
        simulate(1000, (1000, 20), 1000, CAL, shared=False, starts_per_s=AT_ONCE)["cordon_max"] == 0.5
    )  # a bucket raised to the fleet


def test_past_the_bucket_shared_reads_answer_the_waiting_runs_in_a_few_rounds() -> None:
    s = simulate(1000, (100, 20), 1000, CAL, starts_per_s=AT_ONCE)
    assert s["throttled_per_node"] > 0  # 900 first tries refused
    assert s["cordon_max"] < 5  # a round (a token every 50 ms) answers every run waiting, not one
    assert s["ec2_per_node"] < 1.1  # the refused first tries and a few rounds' reads


def test_past_the_concurrency_runs_are_requeued_and_peak_at_the_cap() -> None:
    s = simulate(300, (1000, 1000), 100, CAL, starts_per_s=AT_ONCE)
    assert s["peak"] == 100 and s["requeues"] >= 200
    assert s["cordon_max"] > CAL.to_drained_s + CAL.held_after_drained_s  # the last waited for a run to end


def test_starts_and_the_function_s_scaling_pace_a_large_reclaim() -> None:
    s = simulate(3000, (1e6, 1e6), 5000, CAL)
    assert s["cordon_max"] >= 2999 / 300  # the last start: 300 a second
    assert s["peak"] <= 3000 and s["requeues"] > 0  # 1,000 more every 10 s: the third thousand waited for the step

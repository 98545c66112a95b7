"""The Spot reclaim model of bench/reclaim_model.py (pure): the EC2 bucket and the Lambda concurrency delay the
cordons as their sizes say, and lifting them removes the delay."""

from __future__ import annotations

from bench.reclaim_model import Calibration, simulate

CAL = Calibration(to_describe_s=0.2, to_cordon_s=0.3, to_drained_s=5.0, ec2_per_node=1.0, held_after_drained_s=1.0)


def test_within_the_bucket_and_the_concurrency_nothing_waits() -> None:
    s = simulate(100, (100, 20), 1000, CAL)
    assert s["cordon_max"] == 0.5 and s["throttled_per_node"] == 0 and s["requeues"] == 0
    assert s["in_time"] == 100


def test_past_the_bucket_reads_of_their_own_make_the_last_cordon_wait_at_least_for_the_refill() -> None:
    s = simulate(1000, (100, 20), 1000, CAL, shared=False)
    assert s["cordon_max"] >= (1000 - 100) / 20  # no faster than the bucket refills
    assert s["throttled_per_node"] > 0
    assert simulate(1000, (1000, 20), 1000, CAL, shared=False)["cordon_max"] == 0.5  # a bucket raised to the fleet


def test_past_the_bucket_shared_reads_answer_the_waiting_runs_in_a_few_rounds() -> None:
    s = simulate(1000, (100, 20), 1000, CAL)
    assert s["throttled_per_node"] > 0  # 900 first tries refused
    assert s["cordon_max"] < 5  # a round (a token every 50 ms) answers every run waiting, not one
    assert s["ec2_per_node"] < 1.1  # the refused first tries and a few rounds' reads


def test_past_the_concurrency_runs_are_requeued_and_peak_at_the_cap() -> None:
    s = simulate(300, (1000, 1000), 100, CAL)
    assert s["peak"] == 100 and s["requeues"] >= 200
    assert s["cordon_max"] > CAL.to_drained_s + CAL.held_after_drained_s  # the last waited for a run to end

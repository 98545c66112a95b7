"""The emulator's account limits (testbed/aws/throttle.py, pure): EC2's per-action token buckets by category and
Lambda's concurrency cap, on an injected clock."""

from __future__ import annotations

import random

import pytest

from testbed.aws.throttle import (
    AccountLimits,
    ConcurrencyCap,
    Ec2Category,
    Ec2Throttle,
    TokenBucket,
    ec2_category,
    requeue_delay,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_admits_its_size_at_once_then_its_refill_rate() -> None:
    b = TokenBucket.full(100, 20, now=0.0)
    assert sum(b.take(0.0) for _ in range(150)) == 100
    assert not b.take(0.0)
    assert sum(b.take(1.0) for _ in range(50)) == 20  # one second refills 20
    assert sum(b.take(1.0 + 0.05) for _ in range(5)) == 1  # a token every 50 ms


def test_a_bucket_never_holds_more_than_its_size() -> None:
    b = TokenBucket.full(10, 5, now=0.0)
    assert sum(b.take(0.0) for _ in range(10)) == 10
    assert sum(b.take(3600.0) for _ in range(100)) == 10


def test_a_clock_that_steps_back_refills_nothing() -> None:
    b = TokenBucket.full(1, 1, now=10.0)
    assert b.take(10.0)
    assert not b.take(5.0)
    assert not b.take(10.5)
    assert b.take(11.0)


def test_a_bucket_of_no_size_is_refused_with_its_numbers() -> None:
    with pytest.raises(ValueError, match="size 0"):
        TokenBucket.full(0, 20, now=0.0)


@pytest.mark.parametrize(
    ("action", "params", "category"),
    [
        ("DescribeInstances", {"InstanceId.1": "i-1"}, Ec2Category.NON_MUTATING),
        ("DescribeInstances", {"Filter.1.Name": "tag:x"}, Ec2Category.NON_MUTATING),
        ("DescribeInstances", {}, Ec2Category.UNFILTERED_NON_MUTATING),
        ("TerminateInstances", {"InstanceId.1": "i-1"}, Ec2Category.MUTATING),
    ],
)
def test_an_action_is_bucketed_by_its_documented_category(
    action: str, params: dict[str, str], category: Ec2Category
) -> None:
    assert ec2_category(action, params) is category


def test_each_action_has_its_own_bucket_and_the_throttled_are_counted() -> None:
    clock = Clock()
    ec2 = Ec2Throttle(clock=clock)
    ids = {"InstanceId.1": "i-1"}
    assert sum(ec2.admit("DescribeInstances", ids) for _ in range(130)) == 100
    assert ec2.admit("DescribeInstanceStatus", ids)  # another API is not affected
    assert ec2.throttled == {"DescribeInstances": 30}
    clock.now += 0.5
    assert sum(ec2.admit("DescribeInstances", ids) for _ in range(20)) == 10


def test_a_cap_refuses_past_its_limit_and_admits_again_once_a_run_ends() -> None:
    cap = ConcurrencyCap(2)
    assert cap.acquire() and cap.acquire()
    assert not cap.acquire()
    cap.release()
    assert cap.acquire()
    assert (cap.admitted, cap.throttled, cap.peak, cap.running) == (3, 1, 2, 2)


def test_a_release_without_a_run_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        ConcurrencyCap(1).release()


def test_requeue_delays_grow_from_a_second_to_five_minutes_with_jitter() -> None:
    rng = random.Random(7)
    firsts = [requeue_delay(0, rng) for _ in range(50)]
    assert all(d == 1.0 for d in firsts)  # never sooner than a second
    fifth = [requeue_delay(4, rng) for _ in range(200)]
    assert all(8.0 <= d <= 16.0 for d in fifth) and len(set(fifth)) > 100
    assert all(150.0 <= requeue_delay(30, rng) <= 300.0 for _ in range(50))


def test_limits_are_off_until_configured_and_a_key_left_out_keeps_its_setting() -> None:
    clock = Clock()
    limits = AccountLimits(clock)
    assert all(limits.admit_ec2("DescribeInstances", {}) for _ in range(500))
    assert all(limits.acquire_invocation() for _ in range(500))
    limits.configure({"ec2": {"non-mutating": [2, 1]}, "lambda_concurrency": 1})
    ids = {"InstanceId.1": "i-1"}
    assert [limits.admit_ec2("DescribeInstances", ids) for _ in range(3)] == [True, True, False]
    assert limits.acquire_invocation() and not limits.acquire_invocation()
    state = limits.configure({"ec2": False})
    assert state["ec2"] is None and state["lambda"] == {
        "limit": 1, "running": 1, "peak": 1, "admitted": 1, "throttled": 1,
    }  # fmt: skip
    limits.clear()
    assert limits.describe() == {"ec2": None, "lambda": None}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ec2": "yes"}, "ec2:"),
        ({"ec2": {"mutatin": [1, 1]}}, "ec2.mutatin"),
        ({"ec2": {"mutating": [1]}}, "ec2.mutating"),
        ({"lambda_concurrency": "10"}, "lambda_concurrency"),
        ({"lambda_concurrency": 0}, "at least 1"),
    ],
)
def test_bad_settings_name_their_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        AccountLimits().configure(body)

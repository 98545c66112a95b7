"""Instance reads shared through the shared-reads table once EC2 throttles them, over HTTP to the emulator (moto's
DynamoDB and EC2 with its request token bucket, testbed/aws/throttle.py): many throttled executions are answered by
a few DescribeInstances, each with its own instance's facts; a waiter never takes facts read before it asked; a
lease whose holder died lapses; a table that fails leaves each event to read on its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from drain_orchestrator.aws.clients import dynamodb_client, ec2_client, ec2_single_attempt_client
from drain_orchestrator.aws.reads_table import DynamoReadsTable
from drain_orchestrator.facts import InstanceFacts
from drain_orchestrator.failures import ApiError, FailureKind
from drain_orchestrator.shared_reads import LEASE_SECONDS, SharedRead
from drain_orchestrator.workflow.instance_reads import SharedWhenThrottled
from testbed.aws_seed import AwsSeed

pytestmark = pytest.mark.integration

OWNED = {"eks:cluster-name": "blue"}


@pytest.fixture
def table(aws: AwsSeed) -> Iterator[DynamoReadsTable]:
    session = aws.lambda_session()
    yield DynamoReadsTable(dynamodb_client(session), aws.shared_reads_table())  # type: ignore[arg-type]
    aws.account_limits(ec2=False)


def _facts_source(aws: AwsSeed, table: DynamoReadsTable) -> SharedWhenThrottled:
    session = aws.lambda_session()
    return SharedWhenThrottled(
        ec2_client(session), session.client("autoscaling"), ec2_single_attempt_client(session), table
    )  # type: ignore[arg-type]


def _empty_bucket(aws: AwsSeed, size: float, refill: float, ids: list[str]) -> None:
    aws.account_limits(ec2={"non-mutating": [size, refill]})
    refused = 0
    while refused == 0:  # spend the bucket: the next read finds it empty
        try:
            aws.client("ec2").describe_instances(InstanceIds=ids[:1])
        except Exception:
            refused += 1


def test_throttled_executions_are_answered_by_a_few_reads_each_with_its_own_instance(
    aws: AwsSeed, table: DynamoReadsTable
) -> None:
    ids = [aws.instance(tags={**OWNED, "n": str(n)}) for n in range(40)]
    source = _facts_source(aws, table)
    # a token every 2 s: 40 reads of their own would take 80 s
    _empty_bucket(aws, 1, 0.5, ids)
    before = aws.account_limits()["ec2"]["admitted"].get("DescribeInstances", 0)
    got: dict[str, Any] = {}
    gate = threading.Barrier(len(ids))

    def one(iid: str) -> None:
        gate.wait()
        try:
            got[iid] = source.describe_instances([iid])[iid]
        except Exception as exc:
            got[iid] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in ids]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    took = time.monotonic() - started
    limits = aws.account_limits()["ec2"]

    wrong = {i: f for i, f in got.items() if not (isinstance(f, InstanceFacts) and f.instance_id == i)}
    assert len(got) == len(ids) and not wrong, wrong
    assert [got[i].instance_tags["n"] for i in ids] == [str(n) for n in range(40)]
    reads = limits["admitted"].get("DescribeInstances", 0) - before
    assert limits["throttled"].get("DescribeInstances", 0) >= len(ids), limits  # every first try was refused
    assert reads <= 10, f"{reads} DescribeInstances answered 40 executions in {took:.1f}s"


def test_a_waiter_takes_no_facts_read_before_it_asked(aws: AwsSeed, table: DynamoReadsTable) -> None:
    iid = aws.instance(tags=OWNED)
    stale = InstanceFacts(iid, "stopped", None, None, {"eks:cluster-name": "green"}, None)
    table.publish({iid: stale}, int((time.time() - 5) * 1000))
    session = aws.lambda_session()

    facts = SharedRead(table, lambda ids: _describe(session, ids), time.time, time.sleep).read([iid])

    assert facts[iid] is not None and facts[iid].state == "running", facts
    assert facts[iid].instance_tags.get("eks:cluster-name") == "blue"


def test_a_lease_whose_holder_died_lapses_and_another_reads(aws: AwsSeed, table: DynamoReadsTable) -> None:
    iid = aws.instance(tags=OWNED)
    now_ms = int(time.time() * 1000)
    assert table.take_lease("died-holding-it", now_ms, now_ms + 1500) is not None
    assert table.take_lease("another", now_ms + 1, now_ms + 1000) is None  # held
    session = aws.lambda_session()
    shared = SharedRead(table, lambda ids: _describe(session, ids), time.time, time.sleep)

    started = time.monotonic()
    facts = shared.read([iid])

    assert facts[iid] is not None and facts[iid].instance_id == iid
    assert shared.rounds_read == 1 and time.monotonic() - started < LEASE_SECONDS
    assert time.monotonic() - started >= 1.0  # it waited for the lapse, did not take a held lease


def test_a_waiter_not_answered_within_its_budget_is_throttled(aws: AwsSeed, table: DynamoReadsTable) -> None:
    iid = aws.instance(tags=OWNED)
    _empty_bucket(aws, 1, 0.0001, [iid])
    session = aws.lambda_session()
    single = ec2_single_attempt_client(session)
    shared = SharedRead(table, lambda ids: _describe_with(single, ids), time.time, time.sleep, budget_seconds=1.5)

    with pytest.raises(ApiError) as caught:
        shared.read([iid])

    assert caught.value.kind is FailureKind.THROTTLED and caught.value.service == "ec2"
    assert iid in str(caught.value)


def test_a_table_that_fails_leaves_the_event_to_read_on_its_own(aws: AwsSeed, table: DynamoReadsTable) -> None:
    iid = aws.instance(tags=OWNED)
    session = aws.lambda_session()
    missing = DynamoReadsTable(dynamodb_client(session), "no-such-table")  # type: ignore[arg-type]
    source = _facts_source(aws, missing)
    _empty_bucket(aws, 1, 2, [iid])  # refused first, then a token every 0.5 s for the adaptive client

    facts = source.describe_instances([iid])

    assert facts[iid] is not None and facts[iid].instance_id == iid


def _describe(session: Any, ids: Any) -> dict[str, InstanceFacts | None]:
    return _describe_with(ec2_client(session), ids)


def _describe_with(client: Any, ids: Any) -> dict[str, InstanceFacts | None]:
    from drain_orchestrator.aws.ec2 import describe_instances

    return describe_instances(client, ids)

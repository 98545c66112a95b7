"""Typed API failures: HTTP statuses and AWS error codes map to kinds, and each kind has its retry policy."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from drain_orchestrator.aws.errors import from_botocore_error, from_client_error, translated
from drain_orchestrator.failures import (
    APF_RETRY,
    RETRY_POLICIES,
    ApiError,
    FailureKind,
    InPlaceRetry,
    kind_for_status,
    kind_of,
)
from drain_orchestrator.kube.errors import KubeError, NodeGone


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, FailureKind.UNAUTHORIZED),
        (403, FailureKind.FORBIDDEN),
        (404, FailureKind.NOT_FOUND),
        (409, FailureKind.CONFLICT),
        (429, FailureKind.THROTTLED),
        (500, FailureKind.UNAVAILABLE),
        (503, FailureKind.UNAVAILABLE),
        (400, FailureKind.INVALID),
        (422, FailureKind.INVALID),
    ],
)
def test_http_status_kinds(status: int, kind: FailureKind) -> None:
    assert kind_for_status(status) is kind
    assert KubeError("x", status).kind is kind


def _client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "CompleteLifecycleAction",
    )


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("Throttling", 400, FailureKind.THROTTLED),
        ("RequestLimitExceeded", 503, FailureKind.THROTTLED),
        ("AccessDenied", 403, FailureKind.FORBIDDEN),
        ("UnauthorizedOperation", 403, FailureKind.FORBIDDEN),
        ("ExpiredToken", 403, FailureKind.UNAUTHORIZED),
        ("ServiceUnavailable", 503, FailureKind.UNAVAILABLE),
        ("", 503, FailureKind.UNAVAILABLE),  # a plain-text 503: no code at all, still retried
        ("503", 503, FailureKind.UNAVAILABLE),
        ("InternalFailure", 500, FailureKind.UNAVAILABLE),
        ("ValidationError", 400, FailureKind.INVALID),
        ("ResourceNotFoundException", 404, FailureKind.NOT_FOUND),
    ],
)
def test_aws_error_codes(code: str, status: int, kind: FailureKind) -> None:
    err = from_client_error(_client_error(code, status), "autoscaling")
    assert err.kind is kind and err.code == code and err.status == status


def test_transport_and_setup_errors() -> None:
    assert from_botocore_error(EndpointConnectionError(endpoint_url="http://x"), "ec2").kind is FailureKind.UNAVAILABLE
    assert from_botocore_error(NoCredentialsError(), "ec2").kind is FailureKind.UNAUTHORIZED


def test_translated_adapter_raises_typed_errors() -> None:
    @translated("sns")
    def publish() -> None:
        raise _client_error("Throttling", 400)

    with pytest.raises(ApiError) as caught:
        publish()
    assert caught.value.kind is FailureKind.THROTTLED and caught.value.service == "sns"


def test_node_gone_is_not_found_and_anything_else_is_unexpected() -> None:
    assert kind_of(NodeGone("n1")) is FailureKind.NOT_FOUND
    assert kind_of(TypeError("bug")) is FailureKind.UNEXPECTED


def test_every_kind_has_a_policy_and_transient_kinds_retry_until_the_deadline() -> None:
    assert set(RETRY_POLICIES) == set(FailureKind)
    for kind in (FailureKind.UNAVAILABLE, FailureKind.THROTTLED, FailureKind.UNAUTHORIZED, FailureKind.FORBIDDEN):
        assert not RETRY_POLICIES[kind].gives_up_after(10_000)
    assert RETRY_POLICIES[FailureKind.INVALID].gives_up_after(0)
    assert RETRY_POLICIES[FailureKind.UNEXPECTED].gives_up_after(2)
    assert not RETRY_POLICIES[FailureKind.UNEXPECTED].gives_up_after(1)


def test_backoff_grows_to_its_cap_then_slows_down_for_long_outages() -> None:
    policy = RETRY_POLICIES[FailureKind.UNAVAILABLE]
    delays = [policy.delay(n) for n in range(25)]
    assert delays[:5] == [2, 4, 8, 16, 30]
    assert max(delays[:20]) == 30
    assert delays[20:] == [120] * 5


def test_a_turned_away_request_waits_what_the_server_asked_within_a_cap() -> None:
    rule = InPlaceRetry(attempts=3, max_wait=2.0, jitter=0.5)
    assert rule.wait(1.0, 0.0) == 1.0  # the apiserver's usual Retry-After: 1
    assert rule.wait(None, 0.0) == 1.0  # no Retry-After: a second, not a tight loop
    assert rule.wait(0.0, 0.0) == 1.0
    assert rule.wait(30.0, 0.0) == 2.0  # a long ask is the step's durable retry's business, not a sleep's
    assert rule.wait(1.0, 1.0) == 1.5  # jitter spreads a storm's clients
    # every in-place wait together stays a few seconds of a drain's budget
    assert (APF_RETRY.attempts - 1) * (APF_RETRY.max_wait + APF_RETRY.jitter) <= 5.0


def test_backoffs_are_jittered_over_the_whole_range_and_the_same_on_replay() -> None:
    policy = RETRY_POLICIES[FailureKind.THROTTLED]  # 5, 10, 20, 40, 60 s
    # a storm: 200 executions whose step failed at the same second (times differ in their fractions)
    keys = [f"locate@{1796540000 + i / 1000}" for i in range(200)]
    for attempt in range(5):
        waits = [policy.jittered(attempt, k) for k in keys]
        assert all(1 <= w <= policy.delay(attempt) for w in waits)
        assert len(set(waits)) >= min(policy.delay(attempt), 200) // 2  # spread out, not in step
        assert waits == [policy.jittered(attempt, k) for k in keys]  # a replay waits the same
    # over many draws the mean is half the exponential backoff (full jitter), not the backoff itself
    draws = [policy.jittered(4, f"cordon@{i}") for i in range(2000)]
    assert 25 <= sum(draws) / len(draws) <= 35

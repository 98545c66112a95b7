"""Token format, offline: presigning needs credentials, not a network."""

from __future__ import annotations

import base64
import logging
from urllib.parse import parse_qs, urlparse

import boto3
import pytest

from drain_orchestrator.aws.eks_auth import TOKEN_RENEW_AFTER_SECONDS, TokenSource, generate_token


@pytest.fixture(autouse=True)
def _real_aws_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_STS", raising=False)


def _session(region: str) -> boto3.Session:
    return boto3.Session(
        aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        aws_session_token="session-token",
        region_name=region,
    )


def _url(token: str) -> str:
    assert token.startswith("k8s-aws-v1.")
    body = token.removeprefix("k8s-aws-v1.")
    assert "=" not in body  # base64url without padding
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


@pytest.mark.parametrize(
    ("region", "host"),
    [("eu-west-3", "sts.eu-west-3.amazonaws.com"), ("cn-north-1", "sts.cn-north-1.amazonaws.com.cn")],
)
def test_token_is_a_presigned_get_caller_identity_on_the_clients_regional_endpoint(region: str, host: str) -> None:
    sts = _session(region).client("sts")
    url = urlparse(_url(generate_token("prod", sts)))
    assert (url.scheme, url.netloc, url.path) == ("https", host, "/")
    assert url.netloc == urlparse(sts.meta.endpoint_url).netloc
    query = parse_qs(url.query)
    assert query["Action"] == ["GetCallerIdentity"]
    assert query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert query["X-Amz-Security-Token"] == ["session-token"]
    assert "x-k8s-aws-id" not in query  # a signed header, never a query parameter


def test_the_cluster_name_is_part_of_the_signature() -> None:
    sts = _session("us-east-1").client("sts")
    blue = parse_qs(urlparse(_url(generate_token("blue", sts))).query)["X-Amz-Signature"]
    green = parse_qs(urlparse(_url(generate_token("green", sts))).query)["X-Amz-Signature"]
    assert blue != green


def test_the_token_never_reaches_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    sts = _session("us-east-1").client("sts")
    with caplog.at_level(logging.DEBUG):
        token = generate_token("prod", sts)
    signature = parse_qs(urlparse(_url(token)).query)["X-Amz-Signature"][0]
    assert all(signature not in r.getMessage() and "session-token" not in r.getMessage() for r in caplog.records)
    # other botocore signing logs are not silenced for good
    assert logging.getLogger("botocore.auth").filters[0].filter(logging.makeLogRecord({"msg": "x"}))


def test_token_source_caches_per_cluster_and_renews_before_14_minutes() -> None:
    now = [1000.0]
    tokens = TokenSource(_session("us-east-1"), clock=lambda: now[0])
    first = tokens.token("blue")
    assert tokens.token("blue") == first
    tokens.token("green")
    assert tokens.generated == 2
    now[0] += TOKEN_RENEW_AFTER_SECONDS - 1
    assert tokens.token("blue") == first
    now[0] += 1
    assert TOKEN_RENEW_AFTER_SECONDS < 14 * 60
    assert tokens.generated == 2 and tokens.token("blue") is not None and tokens.generated == 3
    tokens.forget("green")
    tokens.token("green")
    assert tokens.generated == 4

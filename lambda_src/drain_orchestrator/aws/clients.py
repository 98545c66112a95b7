"""One place that builds boto3 clients, so retries and endpoints are the same everywhere."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import NoRegionError

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_eks import EKSClient
    from mypy_boto3_elbv2 import ElasticLoadBalancingv2Client
    from mypy_boto3_sts import STSClient

# Standard retry mode backs off on throttling (Rate exceeded, RequestLimitExceeded) and transient 5xx.
# Endpoints come from the standard AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_<SERVICE> variables (botocore).
# The region: the argument, else AWS_REGION, which botocore does not read but Lambda sets and the AWS CLI v2 and the
# other SDKs read before AWS_DEFAULT_REGION and the profile's; else botocore's own (AWS_DEFAULT_REGION, the profile).
RETRY_CONFIG = Config(retries={"mode": "standard", "max_attempts": 6}, connect_timeout=5, read_timeout=20)


class MissingRegion(NoRegionError):
    """No region anywhere: botocore's own error (every handler of it still applies), saying where to set one."""

    fmt = "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a region in your AWS profile)"


def _client(service: str, session: boto3.Session | None, region: str | None) -> Any:
    session = session or boto3.Session()
    region = region or os.environ.get("AWS_REGION") or session.region_name or None
    if region is None:
        raise MissingRegion()
    return session.client(service, region_name=region, config=RETRY_CONFIG)  # type: ignore[call-overload]


def ec2_client(session: boto3.Session | None = None, region: str | None = None) -> EC2Client:
    client: EC2Client = _client("ec2", session, region)
    return client


def autoscaling_client(session: boto3.Session | None = None, region: str | None = None) -> AutoScalingClient:
    client: AutoScalingClient = _client("autoscaling", session, region)
    return client


def eks_client(session: boto3.Session | None = None, region: str | None = None) -> EKSClient:
    client: EKSClient = _client("eks", session, region)
    return client


def sts_client(session: boto3.Session | None = None, region: str | None = None) -> STSClient:
    client: STSClient = _client("sts", session, region)
    return client


def elbv2_client(session: boto3.Session | None = None, region: str | None = None) -> ElasticLoadBalancingv2Client:
    client: ElasticLoadBalancingv2Client = _client("elbv2", session, region)
    return client


def lambda_client(session: boto3.Session | None = None, region: str | None = None) -> Any:
    """Lambda (the durable-execution callback API); typed Any: no stubs for its newest operations are installed."""
    return _client("lambda", session, region)

"""One place that builds boto3 clients, so retries and endpoints are the same everywhere."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import NoRegionError
from botocore.loaders import Loader

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_eks import EKSClient
    from mypy_boto3_elbv2 import ElasticLoadBalancingv2Client
    from mypy_boto3_sts import STSClient

# Standard retry mode backs off on throttling (Rate exceeded, RequestLimitExceeded) and transient 5xx.
# Endpoints come from the standard AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_<SERVICE> variables (botocore).
# The region: the argument, else AWS_REGION, which botocore does not read but Lambda sets and the AWS CLI v2 and the
# other SDKs read before AWS_DEFAULT_REGION and the profile's; else botocore's own (AWS_DEFAULT_REGION, the profile).
RETRY_CONFIG = Config(retries={"mode": "standard", "max_attempts": 6}, connect_timeout=5, read_timeout=20)

# EC2 and Auto Scaling take every drain's per-event reads and lifecycle calls, against account-wide token buckets a
# fleet-wide reclaim drains at once. Adaptive mode is standard mode (backoff with jitter, retry quota) plus a
# client-side rate limiter: after a throttled answer, this container's calls to that service wait for a token of a
# rate that backs off and recovers (cubic), instead of every thread retrying on its own schedule. Its retries stay
# short, whatever answers or does not: no new attempt after RETRY_WINDOW_SECONDS from the call's start, and at most
# ADAPTIVE_ATTEMPTS sends; longer outages are the steps' durable retries, which end at the drain's deadline
# (failures.RETRY_POLICIES).
ADAPTIVE_ATTEMPTS = 4
RETRY_WINDOW_SECONDS = 10.0
ADAPTIVE_CONFIG = Config(
    retries={"mode": "adaptive", "total_max_attempts": ADAPTIVE_ATTEMPTS}, connect_timeout=5, read_timeout=20
)
# One send, no retry: a read whose throttled answer is better met by another path than by waiting (instance_reads.py).
SINGLE_ATTEMPT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=5, read_timeout=20
)
# The shared-reads table (aws/reads_table.py): short, as a waiter polls again within a second, and a table that does
# not answer is a reason to read EC2 alone, not to wait out botocore's backoff.
TABLE_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=2, read_timeout=5)
_STARTED = "drain_orchestrator_started"


class MissingRegion(NoRegionError):
    """No region anywhere: botocore's own error (every handler of it still applies), saying where to set one."""

    fmt = "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a region in your AWS profile)"


class _PathsOnce(list[str]):
    """The shared loader's search paths: boto3 appends its data directory to the loader of every session it wraps,
    and this list keeps each path once however many sessions share it."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        super().__init__()
        self.extend(paths)

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)

    def extend(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.append(path)


@functools.cache
def _loader(data_path: str | None) -> Loader:
    """One loader per process (per AWS_DATA_PATH, which botocore's own loader reads too)."""
    extra = [os.path.expanduser(os.path.expandvars(p)) for p in data_path.split(os.pathsep)] if data_path else []
    return Loader(extra_search_paths=_PathsOnce(extra))


def new_session() -> boto3.Session:
    """A session of its own (credentials, profile and configuration read now) whose service models come through one
    loader per process. botocore parses every JSON file it needs (a service's model, endpoints, retry rules) once
    per loader, and each session brings its own: six clients of six sessions took ~440 ms on this project's
    machine, of one loader ~250 ms the first time and ~80 ms after. A Lambda container builds its clients once (its
    bundle's pruned models parse quickly: no measurable change to its cold start); the gain is where clients are
    built again, in tests and the CLI whenever the environment changes."""
    core = botocore.session.Session()
    core.register_component("data_loader", _loader(core.get_config_variable("data_path")))
    return boto3.Session(botocore_session=core)


def _client(service: str, session: boto3.Session | None, region: str | None, config: Config = RETRY_CONFIG) -> Any:
    session = session or new_session()
    region = region or os.environ.get("AWS_REGION") or session.region_name or None
    if region is None:
        raise MissingRegion()
    return session.client(service, region_name=region, config=config)  # type: ignore[call-overload]


def _bounded(client: Any) -> Any:
    """``client`` (adaptive mode) with no new attempt once its call has run RETRY_WINDOW_SECONDS."""
    events, service = client.meta.events, client.meta.service_model.service_id.hyphenize()
    events.register("before-call", _note_start)
    # first among the service's own needs-retry handlers (botocore asks the most specific event name first): a False
    # answer ends the retries, None leaves the decision to standard mode's rules
    events.register_first(f"needs-retry.{service}", _within_window)
    return client


def _note_start(context: dict[str, Any], **_: Any) -> None:
    context[_STARTED] = time.monotonic()


def _within_window(request_dict: dict[str, Any], **_: Any) -> bool | None:
    """False (no more attempts) once the call has run RETRY_WINDOW_SECONDS; None leaves it to botocore's rules."""
    started = request_dict.get("context", {}).get(_STARTED)
    if started is not None and time.monotonic() - started >= RETRY_WINDOW_SECONDS:
        return False
    return None


def ec2_client(session: boto3.Session | None = None, region: str | None = None) -> EC2Client:
    client: EC2Client = _bounded(_client("ec2", session, region, ADAPTIVE_CONFIG))
    return client


def ec2_single_attempt_client(session: boto3.Session | None = None, region: str | None = None) -> EC2Client:
    client: EC2Client = _client("ec2", session, region, SINGLE_ATTEMPT_CONFIG)
    return client


def dynamodb_client(session: boto3.Session | None = None, region: str | None = None) -> DynamoDBClient:
    client: DynamoDBClient = _client("dynamodb", session, region, TABLE_CONFIG)
    return client


def autoscaling_client(session: boto3.Session | None = None, region: str | None = None) -> AutoScalingClient:
    client: AutoScalingClient = _bounded(_client("autoscaling", session, region, ADAPTIVE_CONFIG))
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

"""EKS authentication: DescribeCluster (cached per container) and `k8s-aws-v1.` bearer tokens.

The token is a SigV4 query-presigned STS GetCallerIdentity URL whose signature covers the header
`x-k8s-aws-id: <cluster>` (aws-iam-authenticator / aws-cli get_token.py). STS accepts it for 15 minutes
after X-Amz-Date, so a cached token is renewed before 14. Tokens are credentials: never log them.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3

from drain_orchestrator.aws.clients import eks_client, sts_client
from drain_orchestrator.aws.errors import translated

if TYPE_CHECKING:
    from mypy_boto3_eks import EKSClient
    from mypy_boto3_sts import STSClient

TOKEN_PREFIX = "k8s-aws-v1."  # noqa: S105 - a format prefix, not a secret
CLUSTER_ID_HEADER = "x-k8s-aws-id"
# STS ignores X-Amz-Expires for GetCallerIdentity; send 60 like aws-cli and the authenticator do.
PRESIGN_EXPIRES_SECONDS = 60
# Valid 15 min from signing; renew with a margin so a request never leaves with a token about to expire.
TOKEN_RENEW_AFTER_SECONDS = 13 * 60


class ClusterNotReady(RuntimeError):
    """DescribeCluster answered, but the cluster has no endpoint/CA yet (not ACTIVE)."""


@dataclass(frozen=True)
class ClusterInfo:
    name: str
    endpoint: str
    ca_data: str  # base64 PEM, as DescribeCluster returns it
    status: str
    arn: str | None = None


class ClusterDescriber:
    """eks:DescribeCluster with a per-container cache; `forget` drops an entry after an auth failure."""

    def __init__(self, eks: EKSClient | None = None) -> None:
        self._eks = eks
        self._cache: dict[str, ClusterInfo] = {}
        self._lock = threading.Lock()

    @translated("eks")
    def describe(self, name: str) -> ClusterInfo:
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None:
            return cached
        if self._eks is None:
            self._eks = eks_client()
        cluster: Any = self._eks.describe_cluster(name=name)["cluster"]
        endpoint = cluster.get("endpoint")
        ca_data = cluster.get("certificateAuthority", {}).get("data")
        if not endpoint or not ca_data:
            raise ClusterNotReady(f"cluster {name} has no endpoint/CA yet (status {cluster.get('status')})")
        info = ClusterInfo(name, endpoint, ca_data, str(cluster.get("status", "")), cluster.get("arn"))
        with self._lock:
            self._cache[name] = info
        return info

    def forget(self, name: str) -> None:
        with self._lock:
            self._cache.pop(name, None)


class _HideSigning(logging.Filter):
    """botocore.auth logs the canonical request and the signature at DEBUG: together they are the token."""

    def __init__(self) -> None:
        super().__init__()
        self.minting = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self.minting, "active", False)


_hide_signing = _HideSigning()
logging.getLogger("botocore.auth").addFilter(_hide_signing)


def generate_token(cluster: str, sts: STSClient) -> str:
    """A fresh `k8s-aws-v1.` token for `cluster`, signed with the STS client's credentials and endpoint."""
    _hide_signing.minting.active = True
    try:
        return _presign(cluster, sts)
    finally:
        _hide_signing.minting.active = False


def _presign(cluster: str, sts: STSClient) -> str:
    # aws-cli approach: the extra parameter travels through the request context and becomes a signed header,
    # and the URL uses the client's own (regional) endpoint rather than a hard-coded host.
    events = sts.meta.events
    handler_ids = (f"drain-orchestrator-params-{id(sts)}", f"drain-orchestrator-sign-{id(sts)}")
    events.register("provide-client-params.sts.GetCallerIdentity", _stash_cluster_id, unique_id=handler_ids[0])
    events.register("before-sign.sts.GetCallerIdentity", _sign_cluster_id, unique_id=handler_ids[1])
    url = sts.generate_presigned_url(
        "get_caller_identity",
        Params={CLUSTER_ID_HEADER: cluster},
        ExpiresIn=PRESIGN_EXPIRES_SECONDS,
        HttpMethod="GET",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")


def _stash_cluster_id(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    if CLUSTER_ID_HEADER in params:
        context[CLUSTER_ID_HEADER] = params.pop(CLUSTER_ID_HEADER)


def _sign_cluster_id(request: Any, **_: Any) -> None:
    cluster = request.context.get(CLUSTER_ID_HEADER)
    if cluster is not None:
        request.headers[CLUSTER_ID_HEADER] = cluster


@dataclass
class _Cached:
    token: str = field(repr=False)
    issued_at: float


class TokenSource:
    """Per-cluster token cache; `clock` is injectable so tests can age a token past its renewal time."""

    def __init__(
        self,
        session: boto3.Session | None = None,
        region: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._session = session
        self._region = region
        self._clock = clock
        self._sts: STSClient | None = None
        self._tokens: dict[str, _Cached] = {}
        self._lock = threading.Lock()
        self.generated = 0  # how many tokens were minted (observability, tests)

    @translated("sts")
    def token(self, cluster: str) -> str:
        now = self._clock()
        with self._lock:
            cached = self._tokens.get(cluster)
            if cached is not None and now - cached.issued_at < TOKEN_RENEW_AFTER_SECONDS:
                return cached.token
            if self._sts is None:
                self._sts = sts_client(self._session, self._region)
            fresh = _Cached(generate_token(cluster, self._sts), now)
            self._tokens[cluster] = fresh
            self.generated += 1
            return fresh.token

    def forget(self, cluster: str) -> None:
        with self._lock:
            self._tokens.pop(cluster, None)

"""The apiserver of an EKS cluster over HTTPS, without the kubernetes package: one connection per cluster (cached per
container), CA verification always on, a bearer token from aws/eks_auth.py. Callers reach it through kube/connect.py.

The endpoint and CA come from DescribeCluster, or from the deployment's settings (given at synth: no DescribeCluster
on the cold path). After a 401 the cluster facts and the token are forgotten, DescribeCluster is read again and the
request is sent once more with a new token; given facts that DescribeCluster contradicts are replaced, and the
connector keeps a notice of it (``FactsNotice``) for its user to take and report: it calls nothing back.
The token is a credential: it is only ever put into a request's Authorization header, never into a message.
"""

from __future__ import annotations

import base64
import binascii
import ssl
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import urllib3

from drain_orchestrator.aws.eks_auth import ClusterDescriber, ClusterInfo, ClusterNotReady, TokenSource
from drain_orchestrator.failures import ApiError
from drain_orchestrator.kube.rest import TRANSPORT_RETRY
from drain_orchestrator.settings import ClusterEndpoint

# the notices a connector keeps until taken: a user that never takes them (the command line) keeps the latest only
NOTICES_KEPT = 32


@dataclass(frozen=True)
class FactsNotice:
    """What the operator should hear of a cluster's facts: given ones (CLUSTER_ENDPOINTS) that DescribeCluster
    contradicted, or a DescribeCluster read again after a failure that failed too. The request went on either way."""

    cluster: str
    what: str


def given_facts(endpoints: Iterable[ClusterEndpoint]) -> dict[str, ClusterInfo]:
    """The settings' endpoints (CLUSTER_ENDPOINTS) as the facts a connection needs, per cluster."""
    return {e.cluster: ClusterInfo(e.cluster, e.endpoint, e.certificate_authority_data, "given") for e in endpoints}


def same_address(a: ClusterInfo, b: ClusterInfo) -> bool:
    """The same endpoint and CA (DescribeCluster's status and ARN do not matter to a connection)."""
    return a.endpoint.rstrip("/") == b.endpoint.rstrip("/") and _ca_bytes(a) == _ca_bytes(b)


def _ca_bytes(info: ClusterInfo) -> bytes:
    try:
        return base64.b64decode(info.ca_data)
    except (binascii.Error, ValueError):
        return info.ca_data.encode()


def _pool(info: ClusterInfo, size: int) -> urllib3.PoolManager:
    # verifies the certificate chain and the host name; given a CA, it trusts that CA alone (as kubectl does) and
    # does not read the system's CA bundle (20 ms of a cold start, for roots that never sign an EKS endpoint)
    tls = ssl.create_default_context(cadata=base64.b64decode(info.ca_data).decode("ascii"))
    return urllib3.PoolManager(maxsize=size, ssl_context=tls, retries=TRANSPORT_RETRY)


class EksConnection:
    """kube/rest.py's Connection to one EKS cluster, renewable (rest.Renewable): its token is read per request (the
    cached one until it is due for renewal), and its facts are read again after a 401 or, when they were given,
    after a transport failure."""

    def __init__(self, connector: ClusterConnector, info: ClusterInfo, pool_size: int, *, given: bool) -> None:
        self._connector = connector
        self._info = info
        self._pool = _pool(info, pool_size)
        self._given = given  # facts from the settings, not yet compared with DescribeCluster
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EksConnection(cluster={self.cluster!r}, host={self.host!r})"

    @property
    def cluster(self) -> str:
        return self._info.name

    @property
    def host(self) -> str:
        return self._info.endpoint.rstrip("/")

    @property
    def pool(self) -> urllib3.PoolManager:
        return self._pool

    @property
    def headers(self) -> Mapping[str, str]:
        return {"Authorization": self._bearer()}

    def _bearer(self) -> str:
        return f"Bearer {self._connector.tokens.token(self.cluster)}"

    def grow(self, size: int) -> None:
        """Let ``size`` requests share keep-alive connections instead of reopening TLS for each one."""
        with self._lock:
            if self._pool.connection_pool_kw.get("maxsize", 1) < size:
                self._pool.connection_pool_kw["maxsize"] = size
                self._pool.clear()  # pools are per host and created lazily; the next request makes a larger one

    def renew(self, rejected: Mapping[str, str]) -> bool:
        """After a 401: forget the token and the cluster facts, read them again; always worth one more send."""
        with self._lock:
            if rejected.get("Authorization") != self._bearer():
                return True  # another thread renewed since this request left (or the cached token came due)
            self._connector.tokens.forget(self.cluster)
            self._use(self._connector.reread(self._info, failure="401 Unauthorized"))
            return True

    def recheck(self, failure: urllib3.exceptions.HTTPError) -> bool:
        """After a transport failure (TLS, refused, timeout): given facts are compared with DescribeCluster (until
        it answers once); True only when that moved the connection to another endpoint or CA."""
        with self._lock:
            if not self._given:
                return False  # DescribeCluster's facts: the failure is the network's, the steps' retries handle it
            before = self._info
            cause = getattr(failure, "reason", None) or failure  # urllib3 wraps the last error in MaxRetryError
            self._use(self._connector.reread(before, failure=type(cause).__name__))
            return not same_address(before, self._info)

    def _use(self, fresh: ClusterInfo | None) -> None:
        if fresh is None:  # DescribeCluster failed: keep what we have (and compare again after the next failure)
            return
        self._given = False
        if same_address(fresh, self._info):
            return
        size = self._pool.connection_pool_kw.get("maxsize", 1)
        old, self._info, self._pool = self._pool, fresh, _pool(fresh, size)
        old.clear()  # idle connections only: a request in flight on the old pool finishes

    def close(self) -> None:
        self._pool.clear()


class ClusterConnector:
    """One EksConnection per EKS cluster; ``given`` holds facts from the settings (CLUSTER_ENDPOINTS), used instead of
    DescribeCluster until DescribeCluster contradicts them. What the operator should hear of (``FactsNotice``) is
    kept until ``take_notices``: the workflow reports it as each step ends (logs, a metric)."""

    def __init__(
        self,
        describer: ClusterDescriber | None = None,
        tokens: TokenSource | None = None,
        *,
        given: Mapping[str, ClusterInfo] | None = None,
    ) -> None:
        self.describer = describer or ClusterDescriber()
        self.tokens = tokens or TokenSource()
        self._given = dict(given or {})
        self._notices: deque[FactsNotice] = deque(maxlen=NOTICES_KEPT)
        self._connections: dict[str, EksConnection] = {}
        self._lock = threading.Lock()

    def connection(self, cluster: str, pool_size: int = 32) -> EksConnection:
        with self._lock:
            cached = self._connections.get(cluster)
        if cached is not None:
            cached.grow(pool_size)
            return cached
        given = self._given.get(cluster)
        info = given or self.describer.describe(cluster)
        built = EksConnection(self, info, pool_size, given=given is not None)
        with self._lock:
            return self._connections.setdefault(cluster, built)

    def reread(self, current: ClusterInfo, *, failure: str) -> ClusterInfo | None:
        """The cluster's facts from DescribeCluster again, after ``failure`` with ``current``; None when that read
        failed (a notice): the caller keeps what it has."""
        name = current.name
        self.describer.forget(name)
        try:
            fresh = self.describer.describe(name)
        except (ApiError, ClusterNotReady) as exc:
            self._tell(name, f"DescribeCluster after {failure} failed, the endpoint and CA in use are kept: {exc}")
            return None
        given = self._given.get(name)
        if given is not None and not same_address(given, fresh):
            self._given.pop(name, None)
            self._tell(
                name,
                f"the endpoint or CA given in CLUSTER_ENDPOINTS ({failure}) differ from DescribeCluster's, which are "
                "used instead: update the deployment's clusterEndpoints (or leave the cluster out of it)",
            )
        return fresh

    def take_notices(self) -> list[FactsNotice]:
        """The notices kept since the last take, oldest first; taken, they are gone."""
        with self._lock:
            taken = list(self._notices)
            self._notices.clear()
        return taken

    def _tell(self, cluster: str, what: str) -> None:
        with self._lock:
            self._notices.append(FactsNotice(cluster, what))

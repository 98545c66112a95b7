"""Kubernetes API clients for EKS clusters: one per cluster (cached per container), authenticated with EKS tokens.
Callers reach an apiserver through kube/connect.py."""

from __future__ import annotations

import base64
import threading
from typing import Any

from kubernetes import client as k8s

from drain_orchestrator.aws.eks_auth import ClusterDescriber, ClusterInfo, TokenSource

_BEARER = "BearerToken"
_UNAUTHORIZED = 401


class _EksApiClient(k8s.ApiClient):
    """ApiClient that, on a 401, drops cached cluster facts and token and retries once with a new token."""

    def __init__(self, configuration: k8s.Configuration, connector: ClusterConnector, cluster: str) -> None:
        super().__init__(configuration)
        self._connector = connector
        self._cluster = cluster

    def call_api(
        self,
        method: str,
        url: str,
        header_params: dict[str, Any] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        response = super().call_api(method, url, header_params, body, post_params, _request_timeout)
        if response.status != _UNAUTHORIZED or header_params is None:
            return response
        response.read()  # type: ignore[no-untyped-call]  # release the connection before retrying
        token = self._connector.renew(self._cluster)
        header_params = {**header_params, "authorization": f"Bearer {token}"}
        return super().call_api(method, url, header_params, body, post_params, _request_timeout)


class ClusterConnector:
    """Builds and caches an authenticated ApiClient per EKS cluster; CA verification is always on."""

    def __init__(self, describer: ClusterDescriber | None = None, tokens: TokenSource | None = None) -> None:
        self.describer = describer or ClusterDescriber()
        self.tokens = tokens or TokenSource()
        self._clients: dict[str, tuple[ClusterInfo, k8s.ApiClient]] = {}
        self._lock = threading.Lock()

    def api_client(self, cluster: str) -> k8s.ApiClient:
        info = self.describer.describe(cluster)
        with self._lock:
            cached = self._clients.get(cluster)
            # Rebuild when DescribeCluster (re-read after an auth failure) reports another endpoint or CA.
            if cached is not None and cached[0] == info:
                return cached[1]
            api = _EksApiClient(self._configuration(info), self, cluster)
            self._clients[cluster] = (info, api)
            return api

    def renew(self, cluster: str) -> str:
        """After a 401: forget what may be stale (cluster facts, token) and mint a new token."""
        self.describer.forget(cluster)
        self.tokens.forget(cluster)
        return self.tokens.token(cluster)

    def _configuration(self, info: ClusterInfo) -> k8s.Configuration:
        cfg = k8s.Configuration(host=info.endpoint)
        cfg.verify_ssl = True
        cfg.ca_cert_data = base64.b64decode(info.ca_data).decode("ascii")
        cfg.api_key = {_BEARER: self.tokens.token(info.name)}
        cfg.api_key_prefix = {_BEARER: "Bearer"}
        name = info.name

        def refresh(c: k8s.Configuration) -> None:
            # Called before every request; returns the cached token until it is due for renewal.
            c.api_key[_BEARER] = self.tokens.token(name)

        cfg.refresh_api_key_hook = refresh  # type: ignore[assignment]
        return cfg

"""Thin JSON-over-HTTP access to the apiserver: every request counted, raw JSON in and out.

The drain only needs a few fields of what it reads, so it never deserialises into models. Requests go over a
direct urllib3 ``Connection``: to an EKS cluster (kube/client.py: IAM token, renewed after a 401) or from a
kubeconfig (kube/kubeconfig.py). A ``kubernetes.client.ApiClient`` is accepted too (the CLI's fallback for
kubeconfigs with exec plugins, and tests); the Lambda does not ship that package.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlencode

import urllib3

from drain_orchestrator.clip import clip
from drain_orchestrator.failures import APF_RETRY
from drain_orchestrator.kube.errors import KubeError, unreachable

JSON = "application/json"
# an apiserver message kept of a failed request: enough for any message of Kubernetes' own (a budget's refusal, a
# webhook's name and its first words); a webhook's or a policy's denial of 2 KB is not kept whole
MESSAGE_CHARS = 500
# a LIST answered with metadata only (names, annotations, ownerReferences): what a controller lookup needs
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"  # RFC 6902: its ``test`` op makes a write conditional on a value
# What urllib3 may resend by itself: a connection that failed (a keep-alive connection the endpoint closed while the
# container was frozen), once. Not an answer: urllib3's default would resend a GET turned away with 429 three times,
# a second apart, and a read that timed out three times, 30 s each, beyond any rule of ours; 429s are resent by
# Kube.request (failures.APF_RETRY), the rest by the steps' durable retries.
TRANSPORT_RETRY = urllib3.Retry(
    total=1, connect=1, read=1, redirect=0, status=0, other=0, respect_retry_after_header=False, raise_on_status=False
)
UNAUTHORIZED = 401
GONE = 410  # a watch's version no longer held by the server


class Connection(Protocol):
    """A direct HTTPS connection to one apiserver: its URL, a pool verifying its CA, and the headers (auth) a
    request carries, read per request (an EKS token is renewed before it expires)."""

    @property
    def host(self) -> str: ...

    @property
    def pool(self) -> urllib3.PoolManager: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def close(self) -> None: ...


@runtime_checkable
class Renewable(Protocol):
    """A connection whose credentials or cluster facts can be read again (kube/client.py's, to EKS)."""

    def renew(self, rejected: Mapping[str, str]) -> bool:
        """After a 401 to a request sent with ``rejected`` headers: True when the request is worth sending once
        more (credentials renewed, by this call or by another thread since)."""
        ...

    def recheck(self, failure: urllib3.exceptions.HTTPError) -> bool:
        """After a transport failure: True when the connection now points elsewhere (other endpoint or CA), so
        sending once more cannot repeat a request the server already received."""
        ...


@dataclass(frozen=True)
class Response:
    status: int
    body: dict[str, Any]
    headers: Mapping[str, str]

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        """The apiserver's message, clipped: an admission webhook's or a policy's denial is written by whoever wrote
        the webhook or the policy, at any length, and ends up in reports, checkpoints and notifications."""
        return clip(str(self.body.get("message", "")), MESSAGE_CHARS) if self.body else ""

    def error(self, what: str) -> KubeError:
        """This (failed) response as a typed error: ``what`` names the request, e.g. "get node/n1"."""
        return KubeError(f"{what}: {self.status} {self.message}", self.status)

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked to wait (Retry-After header, else details.retryAfterSeconds)."""
        value = self.headers.get("Retry-After") or self.headers.get("retry-after")
        if value:
            try:
                return float(value)
            except ValueError:
                return None
        seconds = (self.body.get("details") or {}).get("retryAfterSeconds") if self.body else None
        return float(seconds) if seconds else None

    def causes(self) -> list[dict[str, Any]]:
        details = self.body.get("details") or {}
        return list(details.get("causes") or [])


class Kube:
    """A Connection (or a generated ApiClient) plus a request counter; the product builds it with kube/connect.py."""

    def __init__(
        self, api_client: Any = None, pool_size: int | None = None, *, connection: Connection | None = None
    ) -> None:
        if (api_client is None) == (connection is None):
            raise ValueError("give exactly one of api_client and connection")
        self.api_client = api_client
        self.connection = connection
        self._lock = threading.Lock()
        self.calls = 0
        self.throttled = 0  # answers turned away by API Priority and Fairness and sent again in place
        # watches the server ended with 410 Gone (an ERROR event: the version they started from is no longer held,
        # compacted away or past the watch cache's window): each is followed by a LIST or a GET, so a re-list loop
        # shows here first
        self.versions_gone = 0
        # resources whose streaming list this apiserver refused (kube/streamed_list.py): listed from then on
        self.streams_refused: set[str] = set()
        if api_client is not None:
            own_transport_retries(api_client)
            if pool_size is not None:
                ensure_pool_size(api_client, pool_size)

    def close(self) -> None:
        (self.connection or self.api_client).close()

    @property
    def _renewable(self) -> Renewable | None:
        return self.connection if isinstance(self.connection, Renewable) else None

    def _count(self) -> None:
        with self._lock:
            self.calls += 1

    def _prepare(
        self, method: str, path: str, query: Mapping[str, Any] | None, body: Any, content_type: str, accept: str = JSON
    ) -> tuple[str, dict[str, str], Any]:
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        if self.connection is not None:
            url = self.connection.host + path
            if query:
                url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
            return url, {**self.connection.headers, **headers}, body
        _, url, headers, body, _ = self.api_client.param_serialize(
            method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        return url, headers, body

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
        timeout: float | None = 30.0,
        retry_throttled: bool = True,
    ) -> Response:
        """One request; a 429 (API Priority and Fairness: never executed) is sent again per ``APF_RETRY`` unless
        ``retry_throttled`` is False (an eviction's 429 may be a budget's refusal, which the drain schedules)."""
        attempt = 1
        while True:
            resp = self._once(method, path, query, body, content_type, accept, timeout)
            if resp.status != 429 or not retry_throttled or attempt >= APF_RETRY.attempts:
                return resp
            with self._lock:
                self.throttled += 1
            time.sleep(APF_RETRY.wait(resp.retry_after, random.random()))  # jitter, not a secret
            attempt += 1

    def _once(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        content_type: str,
        accept: str,
        timeout: float | None,
    ) -> Response:
        """One request; on a renewable connection, a 401 or a transport failure that renewal can cure is sent once
        more (each send counted)."""
        renewable, retried = self._renewable, False
        while True:
            url, headers, payload = self._prepare(method, path, query, body, content_type, accept)
            self._count()
            try:
                raw, data = self._send_once(method, url, headers, payload, timeout)
            except urllib3.exceptions.HTTPError as exc:
                if renewable is not None and not retried and renewable.recheck(exc):
                    retried = True
                    continue
                raise unreachable(exc) from exc
            if raw.status == UNAUTHORIZED and renewable is not None and not retried and renewable.renew(headers):
                retried = True
                continue
            return _response(raw.status, raw.headers, data)

    def _send_once(
        self, method: str, url: str, headers: dict[str, str], payload: Any, timeout: float | None
    ) -> tuple[Any, bytes]:
        if self.connection is not None:
            raw = self.connection.pool.request(
                method,
                url,
                body=json.dumps(payload) if payload is not None else None,
                headers=headers,
                timeout=timeout,
                retries=TRANSPORT_RETRY,
            )
            return raw, raw.data
        # Through call_api so ApiClient subclasses still apply.
        raw = self.api_client.call_api(method, url, header_params=headers, body=payload, _request_timeout=timeout)
        return raw, raw.read()

    def stream_lines(
        self, path: str, query: Mapping[str, Any], timeout: float, opened: Callable[[Any], bool] | None = None
    ) -> Iterator[dict[str, Any]]:
        """A watch: yields decoded events until the server ends it (timeoutSeconds) or the timeout. ``opened`` gets
        the response as soon as it arrives, whatever its status (another thread may ``shutdown()`` it to end the read);
        False: stop."""
        raw = self._open_stream(path, query, timeout)
        try:
            if (opened is not None and not opened(raw)) or raw.status != 200:
                return
            buf = b""
            for chunk in raw.stream(4096, decode_content=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        if version_gone(event):
                            with self._lock:
                                self.versions_gone += 1
                        yield event
        finally:
            # The caller may stop reading mid-stream: close instead of returning a dirty connection.
            raw.close()
            raw.release_conn()

    def _open_stream(self, path: str, query: Mapping[str, Any], timeout: float) -> Any:
        """The watch's response, headers read, body not. A 401 on a renewable connection is renewed and sent once
        more, as any request; a transport failure is left to the watcher (it falls back to its timers)."""
        pool = self.connection.pool if self.connection is not None else self.api_client.rest_client.pool_manager
        renewable, retried = self._renewable, False
        while True:
            url, headers, _ = self._prepare("GET", path, query, None, JSON)
            self._count()
            raw = pool.request("GET", url, headers=headers, preload_content=False, timeout=timeout, retries=False)
            if raw.status == UNAUTHORIZED and renewable is not None and not retried and renewable.renew(headers):
                raw.drain_conn()
                raw.release_conn()
                retried = True
                continue
            return raw


def version_gone(event: Any) -> bool:
    """A watch event saying the watch's version is gone: an ERROR carrying a Status of code 410."""
    if not isinstance(event, dict) or event.get("type") != "ERROR":
        return False
    status = event.get("object")
    return isinstance(status, dict) and status.get("code") == GONE


def _response(status: int, headers: Mapping[str, str], data: bytes) -> Response:
    parsed: dict[str, Any] = {}
    if data:
        try:
            loaded = json.loads(data)
            parsed = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            parsed = {"message": data.decode("utf-8", "replace")[:500]}
    return Response(status, parsed, dict(headers))


def own_transport_retries(api_client: Any) -> None:
    """The client's connection pools resend only per TRANSPORT_RETRY (pools are created lazily, per host)."""
    manager = api_client.rest_client.pool_manager
    if manager.connection_pool_kw.get("retries") is not TRANSPORT_RETRY:
        manager.connection_pool_kw["retries"] = TRANSPORT_RETRY
        manager.clear()


def ensure_pool_size(api_client: Any, size: int) -> None:
    """Let ``size`` requests share keep-alive connections instead of reopening TLS for each one."""
    manager = api_client.rest_client.pool_manager
    if manager.connection_pool_kw.get("maxsize", 1) < size:
        manager.connection_pool_kw["maxsize"] = size
        manager.clear()  # pools are per host and created lazily; the next request makes a larger one

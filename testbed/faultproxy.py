"""An AWS fault proxy on loopback, between the function and the AWS emulator: pass-through by default, it answers
chosen API actions with AWS-shaped faults -- throttling, a 5xx with an XML body, a plain-text 503, a connection
reset -- for N requests or for T seconds, and counts requests per action.

    with FaultProxy(bed.aws_endpoint) as proxy:
        lam.configure("blue", **proxy.env())                   # the function's AWS calls go through the proxy
        fault = proxy.inject("throttle", ["CompleteLifecycleAction"], seconds=150)
        ...
        proxy.count("CompleteLifecycleAction"), fault.injected, fault.ended_at

The action of a request is read as each protocol carries it: ``Action=`` in the form body (query protocol: EC2,
Auto Scaling, SNS, STS), the ``X-Amz-Target`` header (JSON protocol), or, for EKS' REST protocol, the method and
path (``GET /clusters/<name>`` is ``DescribeCluster``).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import struct
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

FaultKind = Literal["throttle", "server-error", "plain-503", "reset", "validation"]
KINDS: tuple[str, ...] = ("throttle", "server-error", "plain-503", "reset", "validation")
# hop-by-hop headers are the proxy's own business (RFC 9110 7.6.1); lengths are recomputed
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}
_EKS_PATHS = (
    (re.compile(r"^/clusters/[^/]+$"), "GET", "DescribeCluster"),
    (re.compile(r"^/clusters$"), "GET", "ListClusters"),
)


@dataclass
class Fault:
    """One injected fault: applies to ``actions`` (empty: every request) until ``times`` requests were answered
    with it or ``seconds`` have passed since it was injected (whichever is given; neither: until cleared)."""

    kind: FaultKind
    actions: frozenset[str]
    times: int | None = None
    seconds: float | None = None
    started_at: float = field(default_factory=time.time)
    injected: int = 0
    last_injected_at: float | None = None
    cleared_at: float | None = None

    def matches(self, action: str, now: float) -> bool:
        return self.active(now) and (not self.actions or action in self.actions)

    def active(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        if self.cleared_at is not None:
            return False
        if self.times is not None and self.injected >= self.times:
            return False
        return self.seconds is None or now < self.started_at + self.seconds

    @property
    def ended_at(self) -> float | None:
        """When the fault stopped applying: the window's end, the last injected answer of a counted fault, or the
        time it was cleared; None while it still applies."""
        if self.active():
            return None
        if self.cleared_at is not None:
            return self.cleared_at
        if self.times is not None and self.injected >= self.times:
            return self.last_injected_at
        assert self.seconds is not None
        return self.started_at + self.seconds


def request_action(method: str, path: str, headers: Any, body: bytes) -> str:
    """The API action a request calls, as each AWS protocol names it."""
    target = headers.get("X-Amz-Target")
    if target:
        return str(target).rsplit(".", 1)[-1]
    ctype = str(headers.get("Content-Type", ""))
    if method == "POST" and "x-www-form-urlencoded" in ctype:
        form = urllib.parse.parse_qs(body.decode(errors="replace"))
        if "Action" in form:
            return form["Action"][0]
    split = urllib.parse.urlsplit(path)
    query = urllib.parse.parse_qs(split.query)
    if "Action" in query:  # presigned or GET query-protocol calls (an EKS token's GetCallerIdentity)
        return query["Action"][0]
    for pattern, verb, action in _EKS_PATHS:
        if method == verb and pattern.match(split.path):
            return action
    return f"{method} {split.path}"


def _service(headers: Any) -> str:
    """The signing service of a request (credential scope: AKID/date/region/SERVICE/aws4_request)."""
    m = re.search(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/", str(headers.get("Authorization", "")))
    return m.group(1) if m else ""


def fault_response(kind: FaultKind, service: str, json_protocol: bool) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of a fault as the service's protocol would carry it."""
    rid = str(uuid.uuid4())
    if kind == "plain-503":  # what a load balancer in front of a service answers: no AWS error document at all
        return 503, {"Content-Type": "text/plain"}, b"Service Unavailable"
    if kind == "throttle":
        # EC2 throttles with RequestLimitExceeded (HTTP 503); the other query services with Throttling (400)
        code, status, message = (
            ("RequestLimitExceeded", 503, "Request limit exceeded.")
            if service == "ec2"
            else ("Throttling", 400, "Rate exceeded")
        )
        if json_protocol:
            code, status = ("ThrottlingException", 400) if service != "eks" else ("TooManyRequestsException", 429)
    elif kind == "validation":  # AWS's answer to a request it refuses as such (a query service's, HTTP 400)
        code, status, message = "ValidationError", 400, "Request refused (injected by the fault proxy)"
    else:
        code, status, message = "InternalFailure", 500, "The request processing has failed because of an unknown error"
    if json_protocol:
        body = json.dumps({"__type": code, "message": message}).encode()
        return status, {"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": code}, body
    if service == "ec2":
        xml = (
            f"<?xml version='1.0' encoding='UTF-8'?><Response><Errors><Error><Code>{code}</Code>"
            f"<Message>{message}</Message></Error></Errors><RequestID>{rid}</RequestID></Response>"
        )
    else:
        kind_of = "Sender" if status < 500 else "Receiver"
        xml = (
            f"<ErrorResponse><Error><Type>{kind_of}</Type><Code>{code}</Code><Message>{message}</Message></Error>"
            f"<RequestId>{rid}</RequestId></ErrorResponse>"
        )
    return status, {"Content-Type": "text/xml"}, xml.encode()


class FaultProxy:
    """A threaded HTTP proxy on 127.0.0.1 in front of ``upstream`` (the emulator's http://127.0.0.1:PORT)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.lock = threading.Lock()
        self.faults: list[Fault] = []
        self.counts: dict[str, int] = {}
        self.injected_counts: dict[str, int] = {}
        self.injected_at: dict[str, list[float]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """Environment that sends a function's AWS calls through the proxy. STS stays direct: the EKS token is a
        presigned STS URL, and the bed's token webhook only accepts the emulator's own STS host."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ENDPOINT_URL_STS": urllib.parse.urlunsplit(self.upstream)}

    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._server.serve_forever, name="aws-fault-proxy", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- faults -------------------------------------------------------------------------------------------------
    def inject(
        self,
        kind: FaultKind,
        actions: list[str] | tuple[str, ...] = (),
        *,
        times: int | None = None,
        seconds: float | None = None,
    ) -> Fault:
        if kind not in KINDS:
            raise ValueError(f"fault kind {kind!r}: expected one of {', '.join(KINDS)}")
        fault = Fault(kind=kind, actions=frozenset(actions), times=times, seconds=seconds)
        with self.lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        now = time.time()
        with self.lock:
            for f in self.faults:
                if f.active(now):
                    f.cleared_at = now

    def count(self, action: str) -> int:
        """Requests the proxy received for ``action`` (answered with a fault or passed through)."""
        with self.lock:
            return self.counts.get(action, 0)

    def injected(self, action: str) -> int:
        with self.lock:
            return self.injected_counts.get(action, 0)

    def injected_times(self, action: str) -> list[float]:
        """When each request for ``action`` was answered with a fault (epoch seconds, in order)."""
        with self.lock:
            return list(self.injected_at.get(action, []))

    def _take(self, action: str) -> Fault | None:
        now = time.time()
        with self.lock:
            self.counts[action] = self.counts.get(action, 0) + 1
            for f in self.faults:
                if f.matches(action, now):
                    f.injected += 1
                    f.last_injected_at = now
                    self.injected_counts[action] = self.injected_counts.get(action, 0) + 1
                    self.injected_at.setdefault(action, []).append(now)
                    return f
        return None

    def _forward(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(self.upstream.hostname or "127.0.0.1", self.upstream.port, timeout=60)
        try:
            out = {k: v for k, v in headers.items() if k.lower() not in _HOP}
            conn.request(method, path, body=body or None, headers=out)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, [(k, v) for k, v in resp.getheaders() if k.lower() not in _HOP], data
        finally:
            conn.close()


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as botocore's connection pool expects

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            action = request_action(self.command, self.path, self.headers, body)
            fault = proxy._take(action)
            if fault is not None and fault.kind == "reset":
                # SO_LINGER 0: close() sends RST, so the client sees "connection reset by peer" mid-request
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            if fault is not None:
                json_protocol = bool(self.headers.get("X-Amz-Target")) or _service(self.headers) == "eks"
                status, headers, data = fault_response(fault.kind, _service(self.headers), json_protocol)
                self._reply(status, list(headers.items()), data)
                return
            try:
                status, hdrs, data = proxy._forward(self.command, self.path, self.headers, body)
            except OSError as exc:
                self._reply(502, [("Content-Type", "text/plain")], f"fault proxy: upstream failed: {exc}".encode())
                return
            self._reply(status, hdrs, data)

        def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
            self.send_response(status)
            for k, v in headers:
                if k.lower() not in ("content-length", "server", "date"):  # send_response wrote its own
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _serve

    return Handler

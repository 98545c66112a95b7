"""The EKS token webhook (HTTPS, TokenReview v1) the local kube-apiserver authenticates bearer tokens with.

It checks ``k8s-aws-v1.`` tokens the way EKS does: prefix, length, a presigned STS GetCallerIdentity GET aimed at the
emulated STS, only whitelisted query parameters, ``x-k8s-aws-id`` among the signed headers, X-Amz-Expires in 0..900,
X-Amz-Date not older than 15 minutes, and the SigV4 signature, recomputed with the caller's secret for each cluster
name the bed serves, so the signed ``x-k8s-aws-id`` must equal a served cluster's name. It then performs the
presigned request against the emulated STS and maps the role ARN of the assumed-role identity to a username and
groups through the access-entry table (per cluster), as EKS access entries with ``kubernetesGroups`` do.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import re
import ssl
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from testbed.aws import sts

TOKEN_PREFIX = "k8s-aws-v1."
MAX_TOKEN_LEN = 4096
TOKEN_LIFETIME_S = 15 * 60
# botocore signs the empty body's hash for STS presigns; other SDKs presign with UNSIGNED-PAYLOAD
PAYLOAD_HASHES = (hashlib.sha256(b"").hexdigest(), "UNSIGNED-PAYLOAD")
ALLOWED_QUERY = {
    "action",
    "version",
    "x-amz-algorithm",
    "x-amz-credential",
    "x-amz-date",
    "x-amz-expires",
    "x-amz-security-token",
    "x-amz-signature",
    "x-amz-signedheaders",
}


class Denied(Exception):
    pass


def _uri_encode(s: str) -> str:
    return urllib.parse.quote(s, safe="-_.~")


def _sigv4_signature(
    secret: str, url: urllib.parse.SplitResult, params: dict[str, str], cluster: str, payload_hash: str
) -> str:
    amz_date = params["X-Amz-Date"]
    scope = params["X-Amz-Credential"].split("/", 1)[1]
    date, region, service, _ = scope.split("/")
    query = "&".join(f"{_uri_encode(k)}={_uri_encode(v)}" for k, v in sorted(params.items()) if k != "X-Amz-Signature")
    signed = params["X-Amz-SignedHeaders"].split(";")
    header_values = {"host": url.netloc, "x-k8s-aws-id": cluster}
    canonical_headers = "".join(f"{h}:{header_values.get(h, '')}\n" for h in signed)
    canonical = "\n".join(["GET", url.path or "/", query, canonical_headers, ";".join(signed), payload_hash])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])

    def _h(key: bytes, msg: str) -> bytes:
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()

    k = _h(_h(_h(_h(("AWS4" + secret).encode(), date), region), service), "aws4_request")
    return hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()


@dataclass
class WebhookConfig:
    sts_endpoint: str  # http://127.0.0.1:P of the emulated STS
    access_entries_file: Path
    audit_file: Path


class TokenVerifier:
    def __init__(self, cfg: WebhookConfig) -> None:
        self.cfg = cfg
        self.lock = threading.Lock()

    def _clusters(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.cfg.access_entries_file.read_text())
        except FileNotFoundError:
            return {}
        clusters: dict[str, dict[str, Any]] = data.get("clusters", {})
        return clusters

    def verify(self, token: str) -> dict[str, Any]:
        if not token.startswith(TOKEN_PREFIX):
            raise Denied("token lacks the k8s-aws-v1. prefix")
        if len(token) > MAX_TOKEN_LEN:
            raise Denied("token is too long")
        b64 = token[len(TOKEN_PREFIX) :]
        try:
            raw_url = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).decode()
        except (ValueError, UnicodeDecodeError) as exc:
            raise Denied(f"token is not base64url: {exc}") from exc
        url = urllib.parse.urlsplit(raw_url)
        expected = urllib.parse.urlsplit(self.cfg.sts_endpoint)
        # EKS requires https and an STS host of the partition; here the one STS there is, the emulator.
        if url.netloc != expected.netloc:
            raise Denied(f"unexpected STS host {url.netloc!r}")
        if url.path not in ("", "/"):
            raise Denied(f"unexpected path {url.path!r}")
        pairs = urllib.parse.parse_qsl(url.query, keep_blank_values=True)
        params: dict[str, str] = {}
        for k, v in pairs:
            if k.lower() not in ALLOWED_QUERY:
                raise Denied(f"non-whitelisted query parameter {k!r}")
            if k in params:
                raise Denied(f"duplicate query parameter {k!r}")
            params[k] = v
        if params.get("Action") != "GetCallerIdentity":
            raise Denied("unexpected action")
        signed = params.get("X-Amz-SignedHeaders", "").split(";")
        if "x-k8s-aws-id" not in signed:
            raise Denied("x-k8s-aws-id is not a signed header")
        try:
            expires = int(params.get("X-Amz-Expires", ""))
        except ValueError as exc:
            raise Denied("X-Amz-Expires missing or not a number") from exc
        if not 0 <= expires <= 900:
            raise Denied("X-Amz-Expires out of range")
        try:
            signed_at = dt.datetime.strptime(params.get("X-Amz-Date", ""), "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        except ValueError as exc:
            raise Denied("X-Amz-Date missing or malformed") from exc
        age = time.time() - signed_at.timestamp()
        if age > TOKEN_LIFETIME_S:
            raise Denied(f"token expired ({int(age)} s old, limit {TOKEN_LIFETIME_S} s)")
        if "X-Amz-Signature" not in params or "X-Amz-Credential" not in params:
            raise Denied("token is not a presigned request")
        access_key = params["X-Amz-Credential"].split("/")[0]
        found = sts.find_secret(access_key)
        if found is None:
            raise Denied(f"unknown access key {access_key}")
        secret, session_token = found
        if session_token and params.get("X-Amz-Security-Token") != session_token:
            raise Denied("security token does not match the access key")
        clusters = self._clusters()
        cluster = next(
            (
                name
                for name in clusters
                for payload_hash in PAYLOAD_HASHES
                if hmac.compare_digest(
                    _sigv4_signature(secret, url, params, name, payload_hash), params["X-Amz-Signature"]
                )
            ),
            None,
        )
        if cluster is None:
            raise Denied("signature does not match any served cluster's x-k8s-aws-id")
        arn = self._caller_arn(raw_url, cluster)
        role_arn = role_arn_of(arn)
        entry = clusters[cluster].get("entries", {}).get(role_arn)
        if entry is None:
            raise Denied(f"no access entry for {role_arn} on cluster {cluster}")
        session = arn.rsplit("/", 1)[-1]
        username = str(entry.get("username") or arn).replace("{{SessionName}}", session)
        return {
            "cluster": cluster,
            "arn": role_arn,
            "username": username,
            "groups": list(entry.get("groups", [])),
            "uid": f"aws-iam-authenticator:{role_arn}",
        }

    def _caller_arn(self, raw_url: str, cluster: str) -> str:
        # Perform the presigned request against the emulated STS, as the EKS authenticator does against STS.
        u = urllib.parse.urlsplit(raw_url)
        req = urllib.request.Request(
            urllib.parse.urlunsplit(("http", self.cfg_netloc(), u.path or "/", u.query, "")),
            headers={"x-k8s-aws-id": cluster},
            method="GET",
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        root = ElementTree.fromstring(body)  # noqa: S314 - our own emulator's answer
        arn = next((el.text for el in root.iter() if el.tag.endswith("Arn")), None)
        if not arn:
            raise Denied("STS answered without an Arn")
        return arn

    def cfg_netloc(self) -> str:
        return urllib.parse.urlsplit(self.cfg.sts_endpoint).netloc

    def audit(self, record: dict[str, Any]) -> None:
        with self.lock, self.cfg.audit_file.open("a") as f:
            f.write(json.dumps(record) + "\n")


def role_arn_of(arn: str) -> str:
    """arn:aws:sts::ACCT:assumed-role/NAME/SESSION -> arn:aws:iam::ACCT:role/NAME (as EKS maps it)."""
    m = re.fullmatch(r"arn:([^:]+):sts::(\d+):assumed-role/([^/]+)/.+", arn)
    if m:
        return f"arn:{m.group(1)}:iam::{m.group(2)}:role/{m.group(3)}"
    return arn


def make_handler(verifier: TokenVerifier) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # silence per-request stderr lines
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            review = json.loads(self.rfile.read(length) or b"{}")
            token = str(review.get("spec", {}).get("token", ""))
            status: dict[str, Any]
            try:
                ident = verifier.verify(token)
                status = {
                    "authenticated": True,
                    "user": {"username": ident["username"], "uid": ident["uid"], "groups": ident["groups"]},
                }
                verifier.audit({**ident, "allowed": True, "reason": "", "time": time.time()})
            except Denied as exc:
                status = {"authenticated": False, "error": str(exc)}
                verifier.audit(
                    {
                        "cluster": None,
                        "arn": None,
                        "username": None,
                        "groups": [],
                        "allowed": False,
                        "reason": str(exc),
                        "time": time.time(),
                    }
                )
            except Exception as exc:  # an unexpected failure must deny, never crash the webhook
                status = {"authenticated": False, "error": f"webhook error: {exc!r}"}
                verifier.audit(
                    {
                        "cluster": None,
                        "arn": None,
                        "username": None,
                        "groups": [],
                        "allowed": False,
                        "reason": f"error: {exc!r}",
                        "time": time.time(),
                    }
                )
            out = json.dumps(
                {
                    "apiVersion": review.get("apiVersion", "authentication.k8s.io/v1"),
                    "kind": "TokenReview",
                    "status": status,
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    return Handler


def serve(port: int, cfg: WebhookConfig, tls_cert: Path, tls_key: Path) -> None:
    """Serve TokenReviews over TLS on 127.0.0.1:``port`` in a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(TokenVerifier(cfg)))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls_cert, tls_key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()

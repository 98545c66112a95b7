"""The test bed's AWS emulator process: moto server on loopback plus three small, documented extensions,
and the EKS token webhook the local kube-apiserver authenticates bearer tokens with.

Run as ``python -m testbed.awsemu --port P --webhook-port W --state-dir DIR ...``.

Extensions to moto 5.2.5 (see docs/testbed.md; ELBv2 target draining is in elbv2_emu.py):
1. Lifecycle actions. moto lacks CompleteLifecycleAction and RecordLifecycleActionHeartbeat. Here an action is
   *active* for (ASG, hook, instance) while it waits; it is started by ``POST /_testbed/lifecycle/start`` (what AWS
   does when an instance enters Pending:Wait / Terminating:Wait), completed by token or instance id, and times out
   after the hook's HeartbeatTimeout (restarted by each heartbeat) or its global timeout (min(48 h, 100 x
   heartbeat timeout)). Each action records its heartbeats (count, last time) and who completed it: the signing
   principal (an assumed role's IAM role ARN) or ``timeout``. A completed, timed-out or unknown action answers
   ValidationError "No active Lifecycle Action found with token ..." / "... with instance ID ...", as AWS does.
2. EKS: DescribeCluster answers with the local apiserver's endpoint and CA (moto invents both).
3. STS: a presigned GetCallerIdentity (query-string SigV4, as EKS tokens carry it) is routed and attributed by its
   ``X-Amz-Credential``; moto only looks at the Authorization header.
4. Request counts: every AWS request is counted by access key, service and action (``POST /_testbed/requests``),
   so a benchmark can tell apart the calls of two tools running side by side.
5. Instance lifecycle states. moto keeps every group's instances InService;
   ``POST /_testbed/autoscaling/instance-state`` sets one instance's LifecycleState (e.g. ``Terminating:Retained``,
   where a group's instance lifecycle policy keeps an instance whose terminate hook was abandoned), as
   DescribeAutoScalingGroups / DescribeAutoScalingInstances show it.

The token webhook (HTTPS, TokenReview v1) checks ``k8s-aws-v1.`` tokens the way EKS does: prefix, length, a
presigned STS GetCallerIdentity GET aimed at the emulated STS, only whitelisted query parameters,
``x-k8s-aws-id`` among the signed headers, X-Amz-Expires in 0..900, X-Amz-Date not older than 15 minutes, and the
SigV4 signature, recomputed with the caller's secret for each cluster name the bed serves, so the signed
``x-k8s-aws-id`` must equal a served cluster's name. It then performs the presigned request against the
emulated STS and maps the role ARN of the assumed-role identity to a username and groups through the access-entry
table (per cluster), as EKS access entries with ``kubernetesGroups`` do.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import hmac
import io
import json
import re
import ssl
import threading
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from testbed import aws_calls, elbv2_emu

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


# --------------------------------------------------------------------------------------------------
# 1. Lifecycle actions
# --------------------------------------------------------------------------------------------------
@dataclass
class LifecycleAction:
    asg: str
    hook: str
    instance_id: str
    token: str
    transition: str
    heartbeat_timeout: int
    global_deadline: float
    deadline: float
    state: str = "ACTIVE"  # ACTIVE | COMPLETED | TIMED_OUT | SUPERSEDED
    result: str | None = None
    heartbeats: int = 0
    last_heartbeat: float | None = None
    # the caller's principal (an assumed role's IAM role ARN, else "access-key:<id>"), or "timeout"
    completed_by: str | None = None
    completed_with: str | None = None  # "token" | "instance-id"
    completed_at: float | None = None
    history: list[str] = field(default_factory=list)

    def refresh(self, now: float) -> None:
        if self.state == "ACTIVE" and now >= min(self.deadline, self.global_deadline):
            self.state = "TIMED_OUT"
            self.completed_by = "timeout"
            self.completed_at = min(self.deadline, self.global_deadline)

    def to_dict(self) -> dict[str, Any]:
        return {
            "asg": self.asg,
            "hook": self.hook,
            "instance_id": self.instance_id,
            "token": self.token,
            "transition": self.transition,
            "state": self.state,
            "result": self.result,
            "heartbeats": self.heartbeats,
            "last_heartbeat": self.last_heartbeat,
            "completed_by": self.completed_by,
            "completed_with": self.completed_with,
            "completed_at": self.completed_at,
        }


class LifecycleStore:
    """Per-process store; cleared with moto's own reset so every test starts clean."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.actions: list[LifecycleAction] = []

    def start(self, asg: str, hook: str, instance_id: str) -> LifecycleAction:
        from moto.autoscaling.models import autoscaling_backends

        backend = _autoscaling_backend(autoscaling_backends)
        hooks = backend.describe_lifecycle_hooks(asg, [hook])
        if not hooks:
            raise LookupError(f"no lifecycle hook {hook!r} on auto scaling group {asg!r}")
        h = hooks[0]
        now = time.time()
        hb = int(h.heartbeat_timeout)
        action = LifecycleAction(
            asg=asg,
            hook=hook,
            instance_id=instance_id,
            token=str(uuid.uuid4()),
            transition=str(h.lifecycle_transition),
            heartbeat_timeout=hb,
            global_deadline=now + min(172800, 100 * hb),
            deadline=now + hb,
        )
        with self.lock:
            # A new action for the same instance and hook replaces a stale one, as a new scale-in would.
            for a in self.actions:
                if a.asg == asg and a.hook == hook and a.instance_id == instance_id and a.state == "ACTIVE":
                    a.state, a.completed_at = "SUPERSEDED", now
            self.actions.append(action)
        return action

    def find_active(self, asg: str, hook: str, token: str | None, instance_id: str | None) -> LifecycleAction:
        from moto.autoscaling.exceptions import ValidationError

        now = time.time()
        with self.lock:
            for a in self.actions:
                a.refresh(now)
                if a.state != "ACTIVE" or a.asg != asg or a.hook != hook:
                    continue
                if (token and a.token == token) or (not token and instance_id and a.instance_id == instance_id):
                    return a
        if token:
            raise ValidationError(f"No active Lifecycle Action found with token {token}")
        raise ValidationError(f"No active Lifecycle Action found with instance ID {instance_id}")

    def describe(self) -> list[dict[str, Any]]:
        now = time.time()
        with self.lock:
            for a in self.actions:
                a.refresh(now)
            return [a.to_dict() for a in self.actions]

    def clear(self) -> None:
        with self.lock:
            self.actions.clear()


LIFECYCLE = LifecycleStore()


def _caller_principal(authorization: str) -> str:
    """Who signed a request: the IAM role ARN behind an assumed-role access key (as CloudTrail names the caller of
    an assumed role), else the access key id itself."""
    m = re.search(r"Credential=([^/,\s]+)/", authorization)
    if not m:
        return "anonymous"
    access_key = m.group(1)
    from moto.sts.models import sts_backends

    for account in list(sts_backends.keys()):
        try:
            backend = sts_backends[account]["aws"]
        except KeyError:
            continue
        role = backend.get_assumed_role_from_access_key(access_key)
        if role is not None:
            return str(role.role_arn)
    return f"access-key:{access_key}"


def _autoscaling_backend(backends: Any) -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID

    return backends[DEFAULT_ACCOUNT_ID]["us-east-1"]


def _install_lifecycle_extension() -> None:
    from moto.autoscaling.exceptions import ValidationError
    from moto.autoscaling.responses import AutoScalingResponse
    from moto.core.responses import EmptyResult

    def _ident(resp: AutoScalingResponse) -> tuple[str, str, str | None, str | None]:
        asg = resp._get_param("AutoScalingGroupName")
        hook = resp._get_param("LifecycleHookName")
        token = resp._get_param("LifecycleActionToken")
        instance_id = resp._get_param("InstanceId")
        if not asg or not hook:
            raise ValidationError("AutoScalingGroupName and LifecycleHookName are required")
        if not token and not instance_id:
            raise ValidationError("Either LifecycleActionToken or InstanceId must be specified")
        return asg, hook, token, instance_id

    def complete_lifecycle_action(self: AutoScalingResponse) -> EmptyResult:
        asg, hook, token, instance_id = _ident(self)
        result = self._get_param("LifecycleActionResult")
        if result not in ("CONTINUE", "ABANDON"):
            raise ValidationError("LifecycleActionResult must be CONTINUE or ABANDON")
        action = LIFECYCLE.find_active(asg, hook, token, instance_id)
        with LIFECYCLE.lock:
            action.state = "COMPLETED"
            action.result = result
            action.completed_by = _caller_principal(self.headers.get("Authorization", ""))
            action.completed_with = "token" if token else "instance-id"
            action.completed_at = time.time()
        return EmptyResult()

    def record_lifecycle_action_heartbeat(self: AutoScalingResponse) -> EmptyResult:
        asg, hook, token, instance_id = _ident(self)
        action = LIFECYCLE.find_active(asg, hook, token, instance_id)
        with LIFECYCLE.lock:
            now = time.time()
            action.heartbeats += 1
            action.last_heartbeat = now
            action.deadline = now + action.heartbeat_timeout
        return EmptyResult()

    AutoScalingResponse.complete_lifecycle_action = complete_lifecycle_action  # type: ignore[attr-defined]
    AutoScalingResponse.record_lifecycle_action_heartbeat = record_lifecycle_action_heartbeat  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------------
# 2. EKS endpoint/CA and 3. STS presigned identity
# --------------------------------------------------------------------------------------------------
def _install_eks_extension(endpoint: str, ca_b64: str) -> None:
    from moto.eks import models as eks_models

    original_init = eks_models.Cluster.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.endpoint = endpoint
        self.certificate_authority = {"data": ca_b64}

    eks_models.Cluster.__init__ = __init__  # type: ignore[method-assign]


def _presigned_as_header_signed(environ: dict[str, Any]) -> None:
    """moto routes requests and reads the caller's access key from the Authorization header only; a presigned
    request carries them in the query string. Restate them as a header so moto serves it like a signed call."""
    if environ.get("HTTP_AUTHORIZATION"):
        return
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    cred = query.get("X-Amz-Credential")
    if cred:
        sig = query.get("X-Amz-Signature", [""])[0]
        signed = query.get("X-Amz-SignedHeaders", [""])[0]
        environ["HTTP_AUTHORIZATION"] = (
            f"AWS4-HMAC-SHA256 Credential={cred[0]}, SignedHeaders={signed}, Signature={sig}"
        )


def _find_secret(access_key_id: str) -> tuple[str, str | None] | None:
    """Secret and session token of an access key moto issued (AssumeRole), else None."""
    from moto.sts.models import sts_backends

    for account in list(sts_backends.keys()):
        for partition in ("aws",):
            try:
                backend = sts_backends[account][partition]
            except KeyError:
                continue
            role = backend.get_assumed_role_from_access_key(access_key_id)
            if role is not None:
                return role.secret_access_key, role.session_token
    return None


# --------------------------------------------------------------------------------------------------
# Token webhook
# --------------------------------------------------------------------------------------------------
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
        found = _find_secret(access_key)
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
        role_arn = _role_arn_of(arn)
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


def _role_arn_of(arn: str) -> str:
    """arn:aws:sts::ACCT:assumed-role/NAME/SESSION -> arn:aws:iam::ACCT:role/NAME (as EKS maps it)."""
    m = re.fullmatch(r"arn:([^:]+):sts::(\d+):assumed-role/([^/]+)/.+", arn)
    if m:
        return f"arn:{m.group(1)}:iam::{m.group(2)}:role/{m.group(3)}"
    return arn


def _make_handler(verifier: TokenVerifier) -> type[BaseHTTPRequestHandler]:
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


# --------------------------------------------------------------------------------------------------
# 4. Request counts
# --------------------------------------------------------------------------------------------------
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/[^/]+/([^/]+)/")


class RequestCounter:
    """AWS requests by (access key id, service, action); cleared with moto's reset."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[tuple[str, str, str], int] = {}

    def record(self, environ: dict[str, Any]) -> None:
        m = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
        if not m:
            return  # unsigned: moto-api, or a presigned STS call (the token webhook's check)
        action = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        if not action:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)  # put the body back for moto
            query = urllib.parse.parse_qs(environ.get("QUERY_STRING", "") + "&" + body.decode(errors="replace"))
            action = (query.get("Action") or [environ.get("PATH_INFO", "")])[0]
        key = (m.group(1), m.group(2), action)
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def describe(self) -> list[dict[str, Any]]:
        with self.lock:
            return [
                {"access_key": k, "service": s, "action": a, "count": n} for (k, s, a), n in sorted(self.counts.items())
            ]

    def clear(self) -> None:
        with self.lock:
            self.counts.clear()


REQUESTS = RequestCounter()


def _set_lifecycle_state(instance_id: str, state: str) -> dict[str, str]:
    from moto.autoscaling.models import autoscaling_backends

    for group in _autoscaling_backend(autoscaling_backends).autoscaling_groups.values():
        for inst in group.instance_states:
            if inst.instance.id == instance_id:
                inst.lifecycle_state = state
                return {"asg": group.name, "instance_id": instance_id, "state": state}
    raise LookupError(f"instance {instance_id!r} is in no auto scaling group")


# --------------------------------------------------------------------------------------------------
# Test-bed control routes on the moto port: /_testbed/...
# --------------------------------------------------------------------------------------------------
def _wrap_app(app: Any, state_dir: Path) -> Any:
    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if not path.startswith("/_testbed/"):
            if path == "/moto-api/reset":
                LIFECYCLE.clear()
                REQUESTS.clear()
            else:
                REQUESTS.record(environ)  # before the presigned restatement: the webhook's STS checks don't count
            _presigned_as_header_signed(environ)
            return _recorded(app, state_dir, environ, start_response)
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
            if path == "/_testbed/lifecycle/start":
                a = LIFECYCLE.start(body["asg"], body["hook"], body["instance_id"])
                payload: Any = a.to_dict()
            elif path == "/_testbed/lifecycle/actions":
                payload = LIFECYCLE.describe()
            elif path == "/_testbed/autoscaling/instance-state":
                payload = _set_lifecycle_state(body["instance_id"], body["state"])
            elif path == "/_testbed/requests":
                payload = REQUESTS.describe()
            elif path == "/_testbed/health":
                payload = {"ok": True}
            else:
                start_response("404 Not Found", [("Content-Type", "application/json")])
                return [b'{"error": "unknown test-bed route"}']
            out = json.dumps(payload).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [out]
        except (LookupError, KeyError) as exc:
            start_response("400 Bad Request", [("Content-Type", "application/json")])
            return [json.dumps({"error": str(exc)}).encode()]

    return wsgi


def _recorded(app: Any, state_dir: Path, environ: dict[str, Any], start_response: Any) -> Any:
    """Serve the request, then append it to the record of the function's AWS calls (aws_calls.py)."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    status: list[int] = []

    def capture(code: str, headers: Any, *rest: Any) -> Any:
        status.append(int(code.split(maxsplit=1)[0]))
        return start_response(code, headers, *rest)

    result = app(environ, capture)
    aws_calls.record(state_dir, environ, body, status[0] if status else 0)
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--webhook-port", type=int, required=True)
    p.add_argument("--state-dir", type=Path, required=True)
    p.add_argument("--tls-cert", type=Path, required=True)
    p.add_argument("--tls-key", type=Path, required=True)
    p.add_argument("--eks-endpoint", required=True)
    p.add_argument("--eks-ca-file", type=Path, required=True)
    a = p.parse_args(argv)

    _install_lifecycle_extension()
    _install_eks_extension(a.eks_endpoint, base64.b64encode(a.eks_ca_file.read_bytes()).decode())
    elbv2_emu.install()

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    cfg = WebhookConfig(
        sts_endpoint=f"http://127.0.0.1:{a.port}",
        access_entries_file=a.state_dir / "access-entries.json",
        audit_file=a.state_dir / "webhook-audit.jsonl",
    )
    verifier = TokenVerifier(cfg)
    hook_server = ThreadingHTTPServer(("127.0.0.1", a.webhook_port), _make_handler(verifier))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.tls_cert, a.tls_key)
    hook_server.socket = ctx.wrap_socket(hook_server.socket, server_side=True)
    threading.Thread(target=hook_server.serve_forever, daemon=True).start()

    app = elbv2_emu.wrap(_wrap_app(DomainDispatcherApplication(create_backend_app), a.state_dir))
    server = make_server("127.0.0.1", a.port, app, threaded=True, request_handler=MotoRequestHandler)
    server.serve_forever()


if __name__ == "__main__":
    main()

"""The test bed's AWS emulator process: moto server on loopback plus small, documented extensions (one module per
service beside this one), and the EKS token webhook the local kube-apiserver authenticates bearer tokens with.

Run as ``python -m testbed.aws.server --port P --webhook-port W --state-dir DIR ...``.

Extensions to moto 5.2.5 (see docs/testbed.md):
1. Auto Scaling lifecycle actions and instance lifecycle states (autoscaling.py).
2. EKS: DescribeCluster answers with the local apiserver's endpoint and CA (eks.py).
3. STS: a presigned GetCallerIdentity (query-string SigV4, as EKS tokens carry it) is routed and attributed by its
   ``X-Amz-Credential`` (sts.py); moto only looks at the Authorization header.
4. Request counts by access key, service and action (request_counts.py).
5. ELBv2 target draining (elbv2.py).
6. CloudFormation: Lambda aliases and CloudWatch alarms as stack resources (cloudformation.py), so the release
   template can be created.
7. IAM for the roles a test installs policies for, decided like AWS's IAM (iam.py).
8. EC2: instances in a capacity reservation, DescribeInstances' ``capacity-reservation-id`` filter, a state read
   that lags, a terminated instance no longer listed, ``InvalidInstanceID.Malformed`` (ec2.py).
9. Account limits, off until a bed turns them on: EC2's request token buckets (``RequestLimitExceeded``) and a Lambda
   concurrency cap that a benchmark's event delivery acquires and releases (throttle.py).
Every request the function's role makes is recorded with its resource (calls.py); the token webhook is in
token_webhook.py.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import re
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

from testbed.aws import autoscaling, calls, cloudformation, ec2, eks, elbv2, iam, sts, throttle, token_webhook
from testbed.aws.request_counts import REQUESTS

_EC2_SIGNED = re.compile(r"Credential=[^/,\s]+/[^/]+/[^/]+/ec2/")


# --------------------------------------------------------------------------------------------------
# Test-bed control routes on the moto port: /_testbed/...
# --------------------------------------------------------------------------------------------------
def _wrap_app(app: Any, state_dir: Path) -> Any:
    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if not path.startswith("/_testbed/"):
            if path == "/moto-api/reset":
                autoscaling.LIFECYCLE.clear()
                iam.IAM.clear()
                ec2.clear()
                REQUESTS.clear()
                throttle.LIMITS.clear()
            else:
                REQUESTS.record(environ)  # before the presigned restatement: the webhook's STS checks don't count
                refused = _ec2_throttled(environ)
                if refused is not None:
                    start_response("503 Service Unavailable", [("Content-Type", "text/xml")])
                    return [refused]
            sts.presigned_as_header_signed(environ)
            return _recorded(app, state_dir, environ, start_response)
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
            if path == "/_testbed/lifecycle/start":
                a = autoscaling.LIFECYCLE.start(body["asg"], body["hook"], body["instance_id"])
                payload: Any = a.to_dict()
            elif path == "/_testbed/lifecycle/actions":
                payload = autoscaling.LIFECYCLE.describe()
            elif path == "/_testbed/autoscaling/instance-state":
                payload = autoscaling.set_lifecycle_state(body["instance_id"], body["state"])
            elif path == "/_testbed/autoscaling/hook-global-timeout":
                payload = autoscaling.set_hook_global_timeout(body["asg"], body["hook"], body["seconds"])
            elif path == "/_testbed/iam/policies":
                payload = iam.IAM.install(body["role_arn"], body["policies"])
            elif path == "/_testbed/ec2/capacity-reservation":
                payload = ec2.place(body["instance_id"], body.get("capacity_reservation_id"))
            elif path == "/_testbed/ec2/instance-state":
                payload = ec2.report_state(body["instance_id"], body["state"], body.get("after_reads", 0))
            elif path == "/_testbed/ec2/forget-terminated":
                payload = ec2.forget_terminated(body["instance_id"])
            elif path == "/_testbed/requests":
                payload = REQUESTS.describe()
            elif path == "/_testbed/throttle":
                payload = throttle.LIMITS.configure(body) if body else throttle.LIMITS.describe()
            elif path == "/_testbed/lambda/acquire":
                payload = {"admitted": throttle.LIMITS.acquire_invocation()}
            elif path == "/_testbed/lambda/release":
                throttle.LIMITS.release_invocation()
                payload = {"released": True}
            elif path == "/_testbed/health":
                payload = {"ok": True}
            else:
                start_response("404 Not Found", [("Content-Type", "application/json")])
                return [b'{"error": "unknown test-bed route"}']
            out = json.dumps(payload).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [out]
        except (LookupError, KeyError, ValueError, RuntimeError) as exc:
            start_response("400 Bad Request", [("Content-Type", "application/json")])
            return [json.dumps({"error": str(exc)}).encode()]

    return wsgi


def _ec2_throttled(environ: dict[str, Any]) -> bytes | None:
    """EC2's ``RequestLimitExceeded`` answer when a signed EC2 request finds its action's bucket empty (throttle.py),
    else None. Every signed EC2 request of the account spends a token, as in AWS."""
    if throttle.LIMITS.ec2 is None:
        return None
    found = _EC2_SIGNED.search(environ.get("HTTP_AUTHORIZATION", ""))
    if not found:
        return None
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)  # put the body back for moto
    params = dict(urllib.parse.parse_qsl(environ.get("QUERY_STRING", "")))
    params.update(urllib.parse.parse_qsl(body.decode(errors="replace")))
    if throttle.LIMITS.admit_ec2(params.get("Action", ""), params):
        return None
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>RequestLimitExceeded</Code>'
        f"<Message>Request limit exceeded.</Message></Error></Errors><RequestID>{uuid.uuid4()}</RequestID></Response>"
    ).encode()


def _recorded(app: Any, state_dir: Path, environ: dict[str, Any], start_response: Any) -> Any:
    """Serve the request (unless IAM denies it: iam.py), then append it to the record of the function's AWS calls
    (calls.py)."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    call = calls.call_of(environ, body)
    if call is not None and not iam.IAM.allows(call):
        line, headers, denied = iam.denial(call)
        start_response(line, headers)
        calls.record(state_dir, call, 403)
        return [denied]
    status: list[int] = []

    def capture(code: str, headers: Any, *rest: Any) -> Any:
        status.append(int(code.split(maxsplit=1)[0]))
        return start_response(code, headers, *rest)

    result = app(environ, capture)
    calls.record(state_dir, call, status[0] if status else 0)
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

    autoscaling.install()
    eks.install(a.eks_endpoint, base64.b64encode(a.eks_ca_file.read_bytes()).decode())
    elbv2.install()
    cloudformation.install()
    ec2.install()

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    cfg = token_webhook.WebhookConfig(
        sts_endpoint=f"http://127.0.0.1:{a.port}",
        access_entries_file=a.state_dir / "access-entries.json",
        audit_file=a.state_dir / "webhook-audit.jsonl",
    )
    token_webhook.serve(a.webhook_port, cfg, a.tls_cert, a.tls_key)

    app = elbv2.wrap(_wrap_app(DomainDispatcherApplication(create_backend_app), a.state_dir))
    server = make_server("127.0.0.1", a.port, app, threaded=True, request_handler=MotoRequestHandler)
    server.serve_forever()


if __name__ == "__main__":
    main()

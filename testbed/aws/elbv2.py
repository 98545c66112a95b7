"""ELBv2 extension of the test bed's AWS emulator (server.py): target deregistration that takes time, as on AWS.

moto 5.2.5 drops a deregistered target at once: DescribeTargetHealth answers ``unused`` for it right away and no
longer lists it. On AWS a deregistered target is ``draining`` for the target group's
``deregistration_delay.timeout_seconds`` (default 300 s), and DescribeTargetHealth without a target list includes
it. Here a deregistered target (instance or ip) is kept ``draining`` until its delay has passed; registering it again
ends the draining. Cleared with moto's own reset.

`wrap` also counts the ELBv2 API calls per action (``GET /_testbed/elbv2/calls``, reset with
``POST /_testbed/elbv2/calls/reset``), so a test can assert what a drain cost.
"""

from __future__ import annotations

import io
import json
import threading
import time
import urllib.parse
from collections import Counter
from typing import Any

_LOCK = threading.Lock()
_DRAINING: dict[tuple[str, str], tuple[dict[str, Any], float]] = {}  # (target group ARN, id) -> (target, until)
_CALLS: Counter[str] = Counter()


def _draining(arn: str) -> list[dict[str, Any]]:
    now = time.time()
    with _LOCK:
        return [dict(t) for (a, _), (t, until) in _DRAINING.items() if a == arn and now < until]


def install() -> None:
    from moto.elbv2.models import ELBv2Backend, FakeHealthStatus, FakeTargetGroup

    deregister, register, health_for = FakeTargetGroup.deregister, FakeTargetGroup.register, FakeTargetGroup.health_for
    describe = ELBv2Backend.describe_target_health

    def deregister_draining(self: Any, targets: list[dict[str, Any]]) -> None:
        before = {t["Id"]: self.targets.get(t["Id"]) for t in targets}
        deregister(self, targets)
        until = time.time() + int(self.attributes.get("deregistration_delay.timeout_seconds", 300))
        with _LOCK:
            for tid, t in before.items():
                if t is not None:
                    _DRAINING[(self.arn, tid)] = (dict(t), until)

    def register_again(self: Any, targets: list[dict[str, Any]]) -> None:
        register(self, targets)
        with _LOCK:
            for t in targets:
                _DRAINING.pop((self.arn, t["Id"]), None)

    def health_while_draining(self: Any, target: dict[str, Any], ec2_backend: Any) -> Any:
        if target["Id"] not in self.targets:
            for t in _draining(self.arn):
                if t["Id"] == target["Id"]:
                    return FakeHealthStatus(
                        t["Id"],
                        t["Port"],
                        self.health_check_port,
                        "draining",
                        "Target.DeregistrationInProgress",
                        "Target deregistration is in progress",
                    )
        return health_for(self, target, ec2_backend)

    def describe_with_draining(self: Any, target_group_arn: str, targets: list[dict[str, Any]]) -> Any:
        if not targets and target_group_arn in self.target_groups:
            targets = list(self.target_groups[target_group_arn].targets.values()) + _draining(target_group_arn)
        return describe(self, target_group_arn, targets)

    FakeTargetGroup.deregister = deregister_draining  # type: ignore[method-assign]
    FakeTargetGroup.register = register_again  # type: ignore[method-assign]
    FakeTargetGroup.health_for = health_while_draining  # type: ignore[method-assign]
    ELBv2Backend.describe_target_health = describe_with_draining  # type: ignore[method-assign]


def clear() -> None:
    with _LOCK:
        _DRAINING.clear()


def wrap(app: Any) -> Any:
    """WSGI middleware: count ELBv2 calls by action, serve the count, clear the state with moto's reset."""

    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_testbed/elbv2/calls"):
            with _LOCK:
                if path.endswith("/reset"):
                    _CALLS.clear()
                out = json.dumps(dict(_CALLS)).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [out]
        if path == "/moto-api/reset":
            clear()
            with _LOCK:
                _CALLS.clear()
        elif "/elasticloadbalancing/" in environ.get("HTTP_AUTHORIZATION", ""):
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)
            action = urllib.parse.parse_qs(body.decode() or environ.get("QUERY_STRING", "")).get("Action", ["?"])[0]
            with _LOCK:
                _CALLS[action] += 1
        return app(environ, start_response)

    return wsgi

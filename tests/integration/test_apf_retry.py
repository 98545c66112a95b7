"""A request turned away by API Priority and Fairness (429: its priority level is full) is sent again in place, a
few times within seconds (failures.APF_RETRY), instead of failing the step into a durable retry; nothing below it
(urllib3's own retries) resends it on its own.

On the bed's apiserver: a priority level of no seats that rejects instead of queueing, for one user of the product's
group. APF lets a request into a level of no seats while nothing else executes there, so a second request of that
user holds the level: a dry-run eviction whose validating webhook (served here) answers only when released."""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from drain_orchestrator.failures import APF_RETRY
from drain_orchestrator.kube.rest import Kube
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from tests.integration.drain_support import DRAIN_GROUP, impersonating

pytestmark = pytest.mark.integration
REG = ("admissionregistration.k8s.io", "v1")


class SeatHolder:
    """A validating webhook on loopback (TLS with the bed's serving certificate) that keeps every review it gets
    waiting until ``release()``; ``entered`` is set when the first one arrives."""

    def __init__(self, testbed: Testbed) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        holder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                holder.entered.set()
                holder.released.wait(20)
                answer = {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": review["request"]["uid"], "allowed": True},
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        pki = testbed.dir / "pki"
        tls.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")  # its SANs include 127.0.0.1
        self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}/validate"

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def full_level(testbed: Testbed, k8s: KubeScenario) -> Iterator[tuple[str, SeatHolder]]:
    """(user, seat holder): the user's requests are classified into a priority level of no seats that rejects."""
    admin = testbed.admin_api_client()
    flowcontrol = client.FlowcontrolApiserverV1Api(admin)
    custom = client.CustomObjectsApi(admin)
    name = f"apf-turned-away-{k8s.ns}"
    holder = SeatHolder(testbed)
    flowcontrol.create_priority_level_configuration(
        {
            "metadata": {"name": name},
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 0,
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"},
                },
            },
        }
    )
    every = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}
    flowcontrol.create_flow_schema(
        {
            "metadata": {"name": name},
            "spec": {
                "priorityLevelConfiguration": {"name": name},
                "matchingPrecedence": 450,  # before global-default and the product's own schema (1000)
                "rules": [{"subjects": [{"kind": "User", "user": {"name": name}}], "resourceRules": [every]}],
            },
        }
    )
    evictions = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/eviction"]}
    custom.create_cluster_custom_object(
        *REG,
        "validatingwebhookconfigurations",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [
                {
                    "name": "hold.apf-retry.drain-test.io",
                    "clientConfig": {"url": holder.url, "caBundle": _b64(testbed.ca_pem)},
                    "rules": [evictions],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": k8s.ns}},
                    "failurePolicy": "Ignore",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 25,
                }
            ],
        },
    )
    try:
        yield name, holder
    finally:
        holder.close()
        with contextlib.suppress(client.ApiException):
            custom.delete_cluster_custom_object(*REG, "validatingwebhookconfigurations", name)
        with contextlib.suppress(client.ApiException):
            flowcontrol.delete_flow_schema(name)
        with contextlib.suppress(client.ApiException):
            flowcontrol.delete_priority_level_configuration(name)
        admin.close()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def classified_into(kube: Kube, level: str, flowcontrol: Any, timeout: float = 60) -> None:
    uid = flowcontrol.read_priority_level_configuration(level).metadata.uid
    end, seen = time.monotonic() + timeout, None
    while time.monotonic() < end:
        resp = kube.request("GET", "/api/v1/nodes", query={"limit": 1})
        seen = {k.lower(): v for k, v in resp.headers.items()}.get("x-kubernetes-pf-prioritylevel-uid")
        if resp.ok and seen == uid:
            return
        time.sleep(0.2)
    raise AssertionError(f"requests not classified into {level} ({uid}) after {timeout:.0f} s: last {seen}")


def hold_the_seat(kube: Kube, k8s: KubeScenario, holder: SeatHolder) -> threading.Thread:
    """A dry-run eviction of a pod, parked in the webhook: the level's only request in execution."""
    k8s.bare_pod("seat", node="no-such-node")
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "seat", "namespace": k8s.ns},
        "deleteOptions": {"dryRun": ["All"]},
    }
    path = f"/api/v1/namespaces/{k8s.ns}/pods/seat/eviction"
    thread = threading.Thread(
        target=lambda: kube.request("POST", path, query={"dryRun": "All"}, body=body, retry_throttled=False),
        daemon=True,
    )
    thread.start()
    assert holder.entered.wait(20), "the dry-run eviction never reached the webhook"
    return thread


@contextlib.contextmanager
def turned_away(testbed: Testbed, k8s: KubeScenario, user: str, holder: SeatHolder) -> Iterator[Kube]:
    """A client of ``user`` whose priority level is held full (by another client of ``user``) until released."""
    flowcontrol = client.FlowcontrolApiserverV1Api(k8s.api_client)
    with impersonating(testbed, DRAIN_GROUP, user) as seat_kube, impersonating(testbed, DRAIN_GROUP, user) as kube:
        classified_into(kube, user, flowcontrol)
        seat = hold_the_seat(seat_kube, k8s, holder)
        try:
            yield kube
        finally:
            holder.release()
            seat.join(30)


def test_a_request_turned_away_by_a_full_priority_level_is_sent_again_in_place(
    testbed: Testbed, k8s: KubeScenario, full_level: tuple[str, SeatHolder]
) -> None:
    user, holder = full_level
    with turned_away(testbed, k8s, user, holder) as kube:
        # while the seat is held, APF turns the user's requests away: what a caller without the retry sees, at once
        # (urllib3 under the generated client would resend a GET three times, a second apart: kube/rest.py's
        # TRANSPORT_RETRY leaves 429s to APF_RETRY)
        started = time.monotonic()
        refused = kube.request("GET", "/api/v1/nodes", query={"limit": 1}, retry_throttled=False)
        assert refused.status == 429, refused
        assert time.monotonic() - started < 0.9, "the 429 was resent below Kube.request"
        assert refused.retry_after is not None and refused.retry_after >= 1
        assert kube.throttled == 0

        # the seat frees a second later: the same request, sent again in place, succeeds
        threading.Timer(1.0, holder.release).start()
        before = kube.calls
        started = time.monotonic()
        answer = kube.request("GET", "/api/v1/nodes", query={"limit": 1})
        took = time.monotonic() - started
        assert answer.ok, answer
        assert kube.throttled >= 1, "the first send was not turned away: the test held no seat"
        assert kube.calls - before == kube.throttled + 1
        assert took < 6.0, f"in-place resends took {took:.1f} s: more than APF_RETRY allows"


def test_a_level_full_for_longer_is_given_up_after_the_last_in_place_send(
    testbed: Testbed, k8s: KubeScenario, full_level: tuple[str, SeatHolder]
) -> None:
    """The caller (the step, with its durable retry bounded by the drain's deadline) gets the 429 back."""
    user, holder = full_level
    with turned_away(testbed, k8s, user, holder) as kube:
        before = kube.calls
        answer = kube.request("GET", "/api/v1/nodes", query={"limit": 1})
    assert answer.status == 429, answer
    assert kube.calls - before == APF_RETRY.attempts
    assert kube.throttled == APF_RETRY.attempts - 1

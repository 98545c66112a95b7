"""EKS connection through the real apiserver and the token webhook: access entries, RBAC, token lifetime, the one
renewal after a 401, CA verification, and the token kept out of every log line and error."""

from __future__ import annotations

import base64
import datetime as dt
import logging
import ssl
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import botocore.auth
import pytest
import urllib3

from drain_orchestrator.aws.clients import eks_client, sts_client
from drain_orchestrator.aws.eks_auth import ClusterDescriber, TokenSource, generate_token
from drain_orchestrator.kube.client import ClusterConnector
from drain_orchestrator.kube.errors import KubeError
from drain_orchestrator.kube.kubeconfig import Connection
from drain_orchestrator.kube.rest import Kube
from drain_orchestrator.kube.watch import Watch
from tests.integration.ownership_support import GROUP, ROLE, describe_cluster_calls, grant

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _connector(session: Any, clock: Clock | None = None) -> ClusterConnector:
    tokens = TokenSource(session, clock=clock) if clock else TokenSource(session)
    return ClusterConnector(ClusterDescriber(eks_client(session)), tokens)


def _kube(connector: ClusterConnector, cluster: str) -> Kube:
    return Kube(connection=connector.connection(cluster, pool_size=4))


def test_allowed_calls_with_the_lambda_role_and_shipped_rbac(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    kube = _kube(_connector(aws.lambda_session()), "blue")
    read = kube.request("GET", f"/api/v1/nodes/{node}")
    assert read.ok and read.body["metadata"]["name"] == node
    denied = kube.request("GET", f"/api/v1/namespaces/{k8s.ns}/secrets")  # RBAC: the group may not read secrets
    assert denied.status == 403
    last = testbed.authentications()[-1]
    assert (last["cluster"], last["arn"], last["allowed"]) == ("blue", aws.role_arn(ROLE), True)
    assert GROUP in last["groups"]


def test_mapped_role_without_a_binding_gets_403(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue", groups=["not-bound-anywhere"])
    [node] = k8s.add_nodes(1)
    assert _kube(_connector(aws.lambda_session()), "blue").request("GET", f"/api/v1/nodes/{node}").status == 403


def test_unknown_role_gets_401_even_after_the_one_retry(testbed: Any, aws: Any, k8s: Any) -> None:
    aws.eks_cluster("blue")  # the cluster exists, but no access entry for this role
    session = aws.lambda_session("someone-else")
    connector = _connector(session)
    [node] = k8s.add_nodes(1)
    kube = _kube(connector, "blue")
    key = session.get_credentials().access_key
    assert describe_cluster_calls(aws, key, "blue") == 1
    assert kube.request("GET", f"/api/v1/nodes/{node}").status == 401
    assert connector.tokens.generated == 2  # first token, then exactly one refresh before giving up
    assert kube.calls == 2
    assert describe_cluster_calls(aws, key, "blue") == 2  # the cluster's facts read again once, after the 401


def test_token_older_than_15_minutes_is_rejected(testbed: Any, aws: Any, k8s: Any, monkeypatch: Any) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    sts = sts_client(aws.lambda_session())
    past = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=16)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: past)
    stale = generate_token("blue", sts)
    monkeypatch.undo()

    def read_with(token: str) -> int:
        pool = urllib3.PoolManager(ssl_context=ssl.create_default_context(cadata=testbed.ca_pem.decode()))
        kube = Kube(connection=Connection(testbed.server, pool, {"Authorization": f"Bearer {token}"}))
        return kube.request("GET", f"/api/v1/nodes/{node}").status

    assert read_with(stale) == 401
    assert read_with(generate_token("blue", sts)) == 200


def test_a_cached_token_about_to_expire_is_renewed_transparently(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    clock = Clock()
    connector = _connector(aws.lambda_session(), clock)
    kube = _kube(connector, "blue")
    assert kube.request("GET", f"/api/v1/nodes/{node}").ok
    assert kube.request("GET", f"/api/v1/nodes/{node}").ok
    assert connector.tokens.generated == 1  # cached between requests
    clock.now += 14 * 60  # the cached token is now too old to send
    assert kube.request("GET", f"/api/v1/nodes/{node}").ok
    assert connector.tokens.generated == 2
    assert kube.calls == 3  # renewed before sending: no 401 on the way
    assert connector.connection("blue") is kube.connection  # same connection, new token


def _sign_in_the_past(monkeypatch: Any, minutes: int) -> None:
    past = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=minutes)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: past)


def test_a_rejected_token_is_refreshed_once_and_the_call_retried(
    testbed: Any, aws: Any, k8s: Any, monkeypatch: Any
) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    connector = _connector(aws.lambda_session(), Clock())  # a frozen clock: the cache never expires by itself
    kube = _kube(connector, "blue")
    _sign_in_the_past(monkeypatch, 20)
    connector.tokens.token("blue")  # the cached token is signed 20 minutes ago: the server says 401
    monkeypatch.undo()
    before = len(testbed.authentications())
    read = kube.request("GET", f"/api/v1/nodes/{node}")
    assert read.ok and read.body["metadata"]["name"] == node
    assert connector.tokens.generated == 2
    allowed = [a["allowed"] for a in testbed.authentications()[before:]]
    assert allowed == [False, True]


def test_a_watch_refused_with_401_is_renewed_once_and_streams(
    testbed: Any, aws: Any, k8s: Any, monkeypatch: Any
) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    connector = _connector(aws.lambda_session(), Clock())
    kube = _kube(connector, "blue")
    _sign_in_the_past(monkeypatch, 20)
    connector.tokens.token("blue")
    monkeypatch.undo()
    query = {"watch": "1", "fieldSelector": f"metadata.name={node}", "timeoutSeconds": 1}
    events = list(kube.stream_lines("/api/v1/nodes", query, timeout=10))
    assert [e["object"]["metadata"]["name"] for e in events] == [node]  # the initial ADDED
    assert connector.tokens.generated == 2 and kube.calls == 2


def test_a_watch_over_the_eks_connection_streams_waits_and_is_closed_at_once(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    kube = _kube(_connector(aws.lambda_session()), "blue")
    nodes = "/api/v1/nodes"

    quiet = Watch(kube, nodes, {"watch": "1", "fieldSelector": "metadata.name=no-such-node", "timeoutSeconds": 2}, 30)
    assert quiet.next(timeout=0.3) is False  # nothing to tell yet: the wait times out, the watch stays open
    assert quiet.next(timeout=20) is None and quiet.status == 200  # then the server ends it (timeoutSeconds)

    listed = kube.request("GET", nodes, query={"fieldSelector": f"metadata.name={node}"})
    version = listed.body["metadata"]["resourceVersion"]
    query = {"watch": "1", "fieldSelector": f"metadata.name={node}", "resourceVersion": version}
    held = Watch(kube, nodes, {**query, "timeoutSeconds": 300}, timeout=300)
    k8s.core.patch_node(node, {"metadata": {"labels": {"watched": "yes"}}})
    deadline = time.monotonic() + 20
    labels: dict[str, str] = {}
    while labels.get("watched") != "yes":  # kwok's status updates may come first
        event = held.next(timeout=deadline - time.monotonic())
        assert isinstance(event, dict), f"the watch ended or stayed silent: {event!r}"
        labels = event["object"]["metadata"].get("labels", {})
    started = time.monotonic()
    held.close()  # shuts the socket down: the reader ends now, not after the server's 300 s
    while (event := held.next(timeout=10)) not in (None, False):
        pass
    assert event is None and held.ended and time.monotonic() - started < 5


def test_ca_verification_is_always_on(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    connection = _connector(aws.lambda_session()).connection("blue")
    assert connection.host == testbed.server
    tls = connection.pool.connection_pool_kw["ssl_context"]
    assert tls.verify_mode == ssl.CERT_REQUIRED and tls.check_hostname
    assert Kube(connection=connection).request("GET", "/version").ok  # the cluster's CA, from DescribeCluster
    # the same request and token with the system's CAs instead: the handshake fails before any request leaves
    system = urllib3.PoolManager(ssl_context=ssl.create_default_context())
    stranger = Kube(connection=Connection(testbed.server, system, dict(connection.headers)))
    with pytest.raises(KubeError) as failed:
        stranger.request("GET", "/version")
    assert failed.value.status is None and "CERTIFICATE_VERIFY_FAILED" in str(failed.value)


def _secrets_of(token: str) -> list[str]:
    """The token, and the signature inside its presigned URL (what would let someone else use it)."""
    encoded = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    (signature,) = parse_qs(urlsplit(url).query)["X-Amz-Signature"]
    return [token, encoded, signature]


def test_the_token_never_reaches_a_log_line_or_an_error(
    testbed: Any, aws: Any, k8s: Any, monkeypatch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    connector = _connector(aws.lambda_session(), Clock())
    kube = _kube(connector, "blue")
    caplog.set_level(logging.DEBUG)  # every library's debug lines (urllib3's requests, botocore's calls and signing)
    _sign_in_the_past(monkeypatch, 20)
    rejected = connector.tokens.token("blue")
    monkeypatch.undo()
    assert kube.request("GET", f"/api/v1/nodes/{node}").ok  # a 401, a renewal, a resend
    renewed = connector.tokens.token("blue")
    assert renewed != rejected
    with pytest.raises(KubeError) as failed:  # a watch read as a plain request: the read times out
        kube.request("GET", "/api/v1/nodes", query={"watch": "1"}, timeout=0.5)
    texts = [caplog.text, str(failed.value), repr(failed.value.__cause__), repr(kube.connection)]
    assert "ReadTimeout" in str(failed.value)
    for secret in (*_secrets_of(rejected), *_secrets_of(renewed)):
        assert all(secret not in text for text in texts)

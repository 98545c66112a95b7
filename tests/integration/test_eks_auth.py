"""EKS connection through the real apiserver and the token webhook: access entries, RBAC, token lifetime."""

from __future__ import annotations

import datetime as dt
from typing import Any

import botocore.auth
import pytest
from kubernetes import client as kclient
from kubernetes.client.exceptions import ApiException

from drain_orchestrator.aws.clients import eks_client, sts_client
from drain_orchestrator.aws.eks_auth import ClusterDescriber, TokenSource, generate_token
from drain_orchestrator.kube.client import ClusterConnector
from tests.integration.ownership_support import GROUP, ROLE, grant

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _connector(session: Any, clock: Clock | None = None) -> ClusterConnector:
    tokens = TokenSource(session, clock=clock) if clock else TokenSource(session)
    return ClusterConnector(ClusterDescriber(eks_client(session)), tokens)


def test_allowed_calls_with_the_lambda_role_and_shipped_rbac(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    core = k8s_core(_connector(aws.lambda_session()), "blue")
    assert core.read_node(node).metadata.name == node
    with pytest.raises(ApiException) as denied:  # RBAC: the group may not read secrets
        core.list_namespaced_secret(k8s.ns)
    assert denied.value.status == 403
    last = testbed.authentications()[-1]
    assert (last["cluster"], last["arn"], last["allowed"]) == ("blue", aws.role_arn(ROLE), True)
    assert GROUP in last["groups"]


def k8s_core(connector: ClusterConnector, cluster: str) -> kclient.CoreV1Api:
    return kclient.CoreV1Api(connector.api_client(cluster))


def test_mapped_role_without_a_binding_gets_403(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue", groups=["not-bound-anywhere"])
    [node] = k8s.add_nodes(1)
    with pytest.raises(ApiException) as caught:
        k8s_core(_connector(aws.lambda_session()), "blue").read_node(node)
    assert caught.value.status == 403


def test_unknown_role_gets_401_even_after_the_one_retry(testbed: Any, aws: Any, k8s: Any) -> None:
    aws.eks_cluster("blue")  # the cluster exists, but no access entry for this role
    connector = _connector(aws.lambda_session("someone-else"))
    [node] = k8s.add_nodes(1)
    with pytest.raises(ApiException) as caught:
        k8s_core(connector, "blue").read_node(node)
    assert caught.value.status == 401
    assert connector.tokens.generated == 2  # first token, then exactly one refresh before giving up


def test_token_older_than_15_minutes_is_rejected(testbed: Any, aws: Any, k8s: Any, monkeypatch: Any) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    sts = sts_client(aws.lambda_session())
    past = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=16)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: past)
    stale = generate_token("blue", sts)
    monkeypatch.undo()
    cfg = kclient.Configuration(host=testbed.server)
    cfg.ca_cert_data = testbed.ca_pem.decode()
    cfg.api_key = {"BearerToken": stale}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    with pytest.raises(ApiException) as caught:
        kclient.CoreV1Api(kclient.ApiClient(cfg)).read_node(node)
    assert caught.value.status == 401
    fresh = generate_token("blue", sts)
    cfg.api_key = {"BearerToken": fresh}
    assert kclient.CoreV1Api(kclient.ApiClient(cfg)).read_node(node).metadata.name == node


def test_a_cached_token_about_to_expire_is_renewed_transparently(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    clock = Clock()
    connector = _connector(aws.lambda_session(), clock)
    core = k8s_core(connector, "blue")
    core.read_node(node)
    core.read_node(node)
    assert connector.tokens.generated == 1  # cached between requests
    clock.now += 14 * 60  # the cached token is now too old to send
    assert core.read_node(node).metadata.name == node
    assert connector.tokens.generated == 2
    assert connector.api_client("blue") is core.api_client  # same client, new token


def test_a_rejected_token_is_refreshed_once_and_the_call_retried(
    testbed: Any, aws: Any, k8s: Any, monkeypatch: Any
) -> None:
    grant(testbed, aws, "blue")
    [node] = k8s.add_nodes(1)
    connector = _connector(aws.lambda_session(), Clock())  # a frozen clock: the cache never expires by itself
    past = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=20)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: past)
    api = connector.api_client("blue")  # its first token is signed 20 minutes ago: the server says 401
    monkeypatch.undo()
    before = len(testbed.authentications())
    assert kclient.CoreV1Api(api).read_node(node).metadata.name == node
    assert connector.tokens.generated == 2
    allowed = [a["allowed"] for a in testbed.authentications()[before:]]
    assert allowed == [False, True]


def test_ca_verification_is_always_on(testbed: Any, aws: Any, k8s: Any) -> None:
    grant(testbed, aws, "blue")
    connector = _connector(aws.lambda_session())
    cfg = connector.api_client("blue").configuration
    assert cfg.verify_ssl is True
    assert cfg.ca_cert_data.strip() == testbed.ca_pem.decode().strip()
    assert cfg.host == testbed.server

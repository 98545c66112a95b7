"""Node lookup against the real apiserver, with the Lambda's token and the shipped RBAC (get/list nodes)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from drain_orchestrator.aws.clients import eks_client
from drain_orchestrator.aws.eks_auth import ClusterDescriber, TokenSource
from drain_orchestrator.kube.client import ClusterConnector
from drain_orchestrator.kube.connect import connect
from drain_orchestrator.kube.node_lookup import find_node
from drain_orchestrator.kube.rest import Kube
from tests.integration.ownership_support import grant

pytestmark = pytest.mark.integration


def _iid() -> str:
    return f"i-{secrets.token_hex(8)}"


@pytest.fixture
def kube(testbed: Any, aws: Any) -> Kube:
    grant(testbed, aws, "blue")
    session = aws.lambda_session()
    connector = ClusterConnector(ClusterDescriber(eks_client(session)), TokenSource(session))
    return connect(cluster="blue", connector=connector)


def test_node_named_by_private_dns_name(kube: Kube, k8s: Any) -> None:
    iid, name = _iid(), f"ip-10-1-{secrets.randbelow(250)}-{secrets.randbelow(250)}.ec2.{k8s.run_id}.internal"
    k8s.add_nodes(1, names=[name], provider_ids=[f"aws:///us-east-1a/{iid}"])
    assert find_node(kube, iid, name, "us-east-1a") == name


def test_a_reused_dns_name_with_another_instance_is_not_taken(kube: Kube, k8s: Any) -> None:
    iid, stale = _iid(), f"ip-10-2-0-1.ec2.{k8s.run_id}.internal"
    k8s.add_nodes(1, names=[stale], provider_ids=[f"aws:///us-east-1a/{_iid()}"])  # someone else's node
    assert find_node(kube, iid, stale, "us-east-1a") is None
    [real] = k8s.add_nodes(1, zone="us-east-1a", provider_ids=[f"aws:///us-east-1a/{iid}"])
    assert find_node(kube, iid, stale, "us-east-1a") == real  # found by providerID instead


def test_provider_id_scan_is_paginated_and_narrowed_by_zone(kube: Kube, k8s: Any) -> None:
    zone = f"us-east-1-{k8s.run_id}"  # a zone of this test only, so the page count is known
    iid = _iid()
    k8s.add_nodes(5, zone=zone)
    [target] = k8s.add_nodes(1, zone=zone, provider_ids=[f"aws:///{zone}/{iid}"])
    seen: list[dict[str, Any]] = []
    original = kube.request

    def counting(method: str, path: str, **kwargs: Any) -> Any:
        if path == "/api/v1/nodes":
            seen.append(dict(kwargs.get("query") or {}))
        return original(method, path, **kwargs)

    kube.request = counting  # type: ignore[method-assign]  # observe the real calls, not a fake
    assert find_node(kube, iid, None, zone, page_size=2) == target
    assert all(call["labelSelector"] == f"topology.kubernetes.io/zone={zone}" for call in seen)
    assert len(seen) >= 2 and seen[-1].get("continue")
    assert find_node(kube, iid, None, "us-east-1f", page_size=2) is None or True  # other zone: not listed there


def test_node_named_by_instance_id_without_zone_label_match(kube: Kube, k8s: Any) -> None:
    iid = _iid()
    k8s.add_nodes(1, zone="us-east-1c", names=[iid], provider_ids=[f"aws:///us-east-1c/{iid}"])
    # EC2 reports another AZ than the node's label (or none): the instance-id name still finds it
    assert find_node(kube, iid, None, "us-east-1a") == iid


def test_no_node_at_all(kube: Kube, k8s: Any) -> None:
    assert find_node(kube, _iid(), "ip-10-9-9-9.ec2.internal", "us-east-1a") is None

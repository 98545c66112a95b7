"""infra/k8s/flowschema.yaml gives the orchestrator's identity a priority level of its own under API Priority and
Fairness, instead of global-default. Checked on the bed's apiserver from the headers APF puts on every response
(X-Kubernetes-PF-FlowSchema-UID / -PriorityLevel-UID), for a request made as the product's group."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, utils

from drain_orchestrator.kube.rest import Kube
from testbed.bed import REPO, Testbed
from tests.integration.drain_support import drainer_client

pytestmark = pytest.mark.integration
FLOWSCHEMA_FILE = REPO / "infra" / "k8s" / "flowschema.yaml"


def classified_as(api: Any) -> tuple[str, str]:
    """(flow schema UID, priority level UID) APF chose for one GET of the node list as ``api``'s identity, through
    the product's own request path."""
    response = Kube(api).request("GET", "/api/v1/nodes", query={"limit": 1})
    assert response.ok, response
    headers = {k.lower(): v for k, v in response.headers.items()}
    return headers["x-kubernetes-pf-flowschema-uid"], headers["x-kubernetes-pf-prioritylevel-uid"]


def uids(flowcontrol: Any, name: str) -> tuple[str, str]:
    schema = flowcontrol.read_flow_schema(name)
    level = flowcontrol.read_priority_level_configuration(schema.spec.priority_level_configuration.name)
    return schema.metadata.uid, level.metadata.uid


def wait_for(what: str, probe: Any, want: tuple[str, str], timeout: float = 60) -> None:
    end, seen = time.monotonic() + timeout, None
    while time.monotonic() < end:
        seen = probe()
        if seen == want:
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: requests still classified as {seen}, want {want}")


@pytest.fixture
def admin(testbed: Testbed) -> Iterator[Any]:
    api = testbed.admin_api_client()
    with api:
        yield api


def test_the_products_requests_get_their_own_priority_level(testbed: Testbed, admin: Any) -> None:
    flowcontrol = client.FlowcontrolApiserverV1Api(admin)
    product = drainer_client(testbed)
    docs = [d for d in yaml.safe_load_all(FLOWSCHEMA_FILE.read_text()) if d]
    assert {d["kind"] for d in docs} == {"FlowSchema", "PriorityLevelConfiguration"}
    with product:
        # without the file: the built-in global-default, like any other unclassified client
        default = uids(flowcontrol, "global-default")
        wait_for("before the flow schema", lambda: classified_as(product), default)
        for doc in docs:
            utils.create_from_dict(admin, doc)
        try:
            ours = uids(flowcontrol, "drain-orchestrator")
            wait_for("after applying infra/k8s/flowschema.yaml", lambda: classified_as(product), ours)
            # the bed's administrator is not the product: it keeps its own classification
            assert classified_as(admin)[0] != ours[0]
        finally:
            flowcontrol.delete_flow_schema("drain-orchestrator")
            flowcontrol.delete_priority_level_configuration("drain-orchestrator")
        wait_for("after deleting it again", lambda: classified_as(product), default)

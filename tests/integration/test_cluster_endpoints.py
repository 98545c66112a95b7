"""Cluster endpoints and CAs given at synth (CLUSTER_ENDPOINTS): no DescribeCluster on the cold path; DescribeCluster
as the fallback when they fail (TLS, connection), reported naming the setting; and read again after a 401. The
emulator's request counts show which DescribeCluster calls the function's role made."""

from __future__ import annotations

import base64
import json
import os

import pytest

from drain_orchestrator.aws.clients import eks_client
from drain_orchestrator.aws.eks_auth import ClusterDescriber, ClusterInfo, TokenSource
from drain_orchestrator.kube.client import ClusterConnector
from drain_orchestrator.kube.errors import KubeError
from drain_orchestrator.kube.rest import Kube
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.kube import KubeScenario
from testbed.pki import other_ca_pem
from testbed.procs import free_port
from tests.integration.lambda_support import LambdaHarness, Run
from tests.integration.ownership_support import describe_cluster_calls, grant

pytestmark = pytest.mark.integration
OWNED = {"kubernetes.io/cluster/blue": "owned"}


def _given(endpoint: str, ca_pem: bytes) -> str:
    return json.dumps({"blue": {"endpoint": endpoint, "certificateAuthorityData": base64.b64encode(ca_pem).decode()}})


def _cordon_through_the_handler(aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, **env: str) -> tuple[Run, str]:
    """A rebalance recommendation (cordon only) for a fresh node of ``blue``, in a fresh container."""
    iid = aws.instance(tags=OWNED)
    (node,) = aws.nodes_for(k8s, [iid])
    lam.configure("blue", **{"REBALANCE_RETURN_SECONDS": "0", **env})  # the cordon stays for the assertions
    run = lam.run(samples.ec2_event("rebalance-recommendation.json", instance_id=iid))
    assert run.status == "SUCCEEDED", run.error
    (inst,) = run.result["instances"]  # type: ignore[index]
    assert (inst["node"], inst["result"]) == (node, "cordoned"), inst
    assert k8s.core.read_node(node).spec.unschedulable is True
    return run, node


def _describes(aws: AwsSeed) -> int:
    """DescribeCluster calls of the function's role (its credentials are the environment's)."""
    return describe_cluster_calls(aws, os.environ["AWS_ACCESS_KEY_ID"], "blue")


def test_given_endpoint_and_ca_reach_the_cluster_without_describe_cluster(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws.eks_cluster("blue")
    run, _ = _cordon_through_the_handler(aws, k8s, lam, CLUSTER_ENDPOINTS=_given(testbed.server, testbed.ca_pem))
    assert _describes(aws) == 0
    assert run.metric_total("Errors") == 0
    # without them, a cold container asks DescribeCluster
    monkeypatch.delenv("CLUSTER_ENDPOINTS")
    _cordon_through_the_handler(aws, k8s, lam)
    assert _describes(aws) == 1


@pytest.mark.parametrize("wrong", ["ca", "endpoint"])
def test_given_facts_that_fail_fall_back_to_describe_cluster_and_say_so(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, lam: LambdaHarness, wrong: str
) -> None:
    given = (
        _given(testbed.server, other_ca_pem())  # TLS: the apiserver's certificate is not signed by it
        if wrong == "ca"
        else _given(f"https://127.0.0.1:{free_port()}", testbed.ca_pem)  # nothing listens there: refused
    )
    aws.eks_cluster("blue")
    run, _ = _cordon_through_the_handler(aws, k8s, lam, CLUSTER_ENDPOINTS=given)
    assert _describes(aws) == 1  # once, after the failure; the drain went on with DescribeCluster's facts
    assert run.metric_total("Errors", reason="cluster-endpoint", cluster="blue") == 1
    (line,) = [json.loads(x) for x in run.stdout.splitlines() if '"cluster blue: the endpoint or CA given' in x]
    assert line["level"] == "ERROR" and "CLUSTER_ENDPOINTS" in line["message"] and "DescribeCluster" in line["message"]


def _connector(
    aws: AwsSeed, given: dict[str, ClusterInfo], role: str = "drain-orchestrator"
) -> tuple[ClusterConnector, str]:
    """A connector with ``given`` facts, and its role session's access key."""
    session = aws.lambda_session(role)
    connector = ClusterConnector(ClusterDescriber(eks_client(session)), TokenSource(session), given=given)
    return connector, session.get_credentials().access_key


def _heard(connector: ClusterConnector) -> list[str]:
    """The notices the connector kept, taken (as the workflow takes them when a step ends)."""
    return [f"{n.cluster}: {n.what}" for n in connector.take_notices()]


def test_given_facts_confirmed_by_describe_cluster_leave_a_401_to_the_identity(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario
) -> None:
    aws.eks_cluster("blue")  # no access entry for this role: every token is refused
    right = ClusterInfo("blue", testbed.server, base64.b64encode(testbed.ca_pem).decode(), "given")
    connector, key = _connector(aws, {"blue": right}, role="someone-else")
    kube = Kube(connection=connector.connection("blue"))
    assert describe_cluster_calls(aws, key, "blue") == 0
    assert kube.request("GET", "/api/v1/nodes", query={"limit": 1}).status == 401  # the caller's typed error
    assert describe_cluster_calls(aws, key, "blue") == 1  # read again after the 401, once: no loop
    assert connector.tokens.generated == 2 and kube.calls == 2
    assert _heard(connector) == []  # the facts were right: nothing to say about them
    assert kube.request("GET", "/api/v1/nodes", query={"limit": 1}).status == 401
    assert describe_cluster_calls(aws, key, "blue") == 2 and kube.calls == 4  # one more send per request, no more


def test_given_facts_that_fail_while_describe_cluster_fails_too_end_in_a_clear_error(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario
) -> None:
    grant(testbed, aws, "blue")
    wrong = ClusterInfo("ghost", testbed.server, base64.b64encode(other_ca_pem()).decode(), "given")
    connector, _ = _connector(aws, {"ghost": wrong})  # no such EKS cluster: DescribeCluster says 404
    kube = Kube(connection=connector.connection("ghost"))
    with pytest.raises(KubeError) as failed:
        kube.request("GET", "/version")
    assert failed.value.status is None and "CERTIFICATE_VERIFY_FAILED" in str(failed.value)
    (said,) = _heard(connector)
    assert said.startswith("ghost: DescribeCluster after SSLError failed, the endpoint and CA in use are kept")
    assert kube.calls == 1  # not sent again: nothing changed

"""The test bed's fault tools, each on its own: component stop/restart and freeze, access-entry revoke/restore, the
AWS fault proxy, etcd compaction, and the lifecycle-action record (heartbeats, who completed an action)."""

from __future__ import annotations

import time

import boto3
import pytest
import urllib3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from botocore.parsers import ResponseParserError
from kubernetes.client.exceptions import ApiException

from drain_orchestrator.aws.clients import eks_client
from drain_orchestrator.aws.eks_auth import ClusterDescriber, TokenSource
from drain_orchestrator.kube.client import ClusterConnector
from drain_orchestrator.kube.rest import Kube
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.etcd_compaction import Compactor
from testbed.faultproxy import FaultProxy
from testbed.faults import BedFaults
from testbed.kube import KubeScenario
from tests.integration.ownership_support import ROLE, grant

pytestmark = pytest.mark.integration
NO_RETRY = Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=5, read_timeout=10)


def test_apiserver_stop_and_restart_with_the_same_arguments_lets_clients_reconnect(
    testbed: Testbed, k8s: KubeScenario, bed_faults: BedFaults
) -> None:
    before = next(p for p in testbed.state.procs if p.name == "kube-apiserver")
    k8s.core.list_namespace(limit=1)  # the admin client has a pooled connection to the apiserver
    bed_faults.stop("kube-apiserver")
    assert not bed_faults.running("kube-apiserver")
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        k8s.core.list_namespace(limit=1, _request_timeout=3)
    took = bed_faults.restart("kube-apiserver")
    after = next(p for p in testbed.state.procs if p.name == "kube-apiserver")
    assert after.pid != before.pid and after.argv == before.argv
    # the same client object (same CA, same client certificate, same port) works again
    assert k8s.core.list_namespace(limit=1).items
    (node,) = k8s.add_nodes(1)  # controllers and kwok reconnected too: a new node turns Ready
    assert k8s.node_ready(node)
    print(f"MEASURE tool=apiserver-restart healthy_after_s={took:.1f}")


def test_a_frozen_apiserver_keeps_its_port_and_answers_nothing_until_it_continues(
    testbed: Testbed, k8s: KubeScenario, bed_faults: BedFaults
) -> None:
    before = next(p for p in testbed.state.procs if p.name == "kube-apiserver")
    with bed_faults.frozen("kube-apiserver"):
        assert bed_faults.running("kube-apiserver")  # the same process, stopped in place
        with pytest.raises(urllib3.exceptions.MaxRetryError):
            k8s.core.list_namespace(limit=1, _request_timeout=2)  # connected, never answered
    assert next(p for p in testbed.state.procs if p.name == "kube-apiserver").pid == before.pid
    assert k8s.core.list_namespace(limit=1).items  # it answers again


def test_revoked_access_entry_gets_401_and_authenticates_again_once_restored(
    testbed: Testbed, aws: AwsSeed, k8s: KubeScenario, bed_faults: BedFaults
) -> None:
    grant(testbed, aws, "blue")
    (node,) = k8s.add_nodes(1)
    session = aws.lambda_session()
    connector = ClusterConnector(ClusterDescriber(eks_client(session)), TokenSource(session))
    kube = Kube(connection=connector.connection("blue"))
    assert kube.request("GET", f"/api/v1/nodes/{node}").ok
    bed_faults.revoke_access_entry("blue", aws.role_arn(ROLE))

    def status() -> int:
        return kube.request("GET", f"/api/v1/nodes/{node}").status

    # the apiserver keeps a successful token review for 10 s (its built-in success cache), then asks the webhook
    assert k8s.wait_for(lambda: status() == 401, timeout=20, what="401 after the revocation")
    assert testbed.authentications()[-1]["allowed"] is False
    bed_faults.restore_access_entry("blue", aws.role_arn(ROLE))
    assert kube.request("GET", f"/api/v1/nodes/{node}").ok
    assert testbed.authentications()[-1]["allowed"] is True


def _client(service: str, proxy: FaultProxy) -> object:
    return boto3.client(
        service,
        endpoint_url=proxy.url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # moto's fake credentials
        config=NO_RETRY,
    )


def test_fault_proxy_injects_each_fault_by_action_and_counts_requests(aws: AwsSeed, aws_faults: FaultProxy) -> None:
    aws.asg("ng-blue", size=1)
    asc, ec2, sns = _client("autoscaling", aws_faults), _client("ec2", aws_faults), _client("sns", aws_faults)
    aws_faults.inject("throttle", ["DescribeAutoScalingGroups"], times=2)
    for _ in range(2):
        with pytest.raises(ClientError) as throttled:
            asc.describe_auto_scaling_groups()  # type: ignore[attr-defined]
        err = throttled.value.response
        assert (err["Error"]["Code"], err["ResponseMetadata"]["HTTPStatusCode"]) == ("Throttling", 400)
    assert asc.describe_auto_scaling_groups()["AutoScalingGroups"]  # type: ignore[attr-defined]
    assert aws_faults.count("DescribeAutoScalingGroups") == 3
    assert aws_faults.injected("DescribeAutoScalingGroups") == 2

    aws_faults.inject("throttle", ["DescribeInstances"], times=1)
    with pytest.raises(ClientError) as ec2_throttled:
        ec2.describe_instances()  # type: ignore[attr-defined]
    assert ec2_throttled.value.response["Error"]["Code"] == "RequestLimitExceeded"

    # a plain-text 503 carries no AWS error document: botocore cannot even parse it (and does not retry it)
    aws_faults.inject("plain-503", ["DescribeInstances"], times=1)
    with pytest.raises(ResponseParserError, match="Service Unavailable"):
        ec2.describe_instances()  # type: ignore[attr-defined]

    aws_faults.inject("server-error", ["ListTopics"], times=1)
    with pytest.raises(ClientError) as five:
        sns.list_topics()  # type: ignore[attr-defined]
    assert (five.value.response["Error"]["Code"], five.value.response["ResponseMetadata"]["HTTPStatusCode"]) == (
        "InternalFailure",
        500,
    )

    aws_faults.inject("reset", ["ListTopics"], times=1)
    with pytest.raises((ConnectionClosedError, EndpointConnectionError)):
        sns.list_topics()  # type: ignore[attr-defined]
    sns.list_topics()  # type: ignore[attr-defined]
    assert aws_faults.count("ListTopics") == 3
    # untouched actions pass through
    assert ec2.describe_instances()["Reservations"]  # type: ignore[attr-defined]


def test_fault_proxy_window_ends_after_its_seconds_and_reads_eks_actions_from_the_path(
    aws: AwsSeed, aws_faults: FaultProxy
) -> None:
    aws.eks_cluster("blue")
    eks = _client("eks", aws_faults)
    # a window long enough for the first call to land in it on a loaded machine (the client signs, connects first)
    fault = aws_faults.inject("throttle", ["DescribeCluster"], seconds=5)
    with pytest.raises(ClientError) as throttled:
        eks.describe_cluster(name="blue")  # type: ignore[attr-defined]
    assert throttled.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert fault.ended_at is None
    deadline = time.monotonic() + 15
    while fault.ended_at is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fault.ended_at is not None
    assert eks.describe_cluster(name="blue")["cluster"]["name"] == "blue"  # type: ignore[attr-defined]
    assert aws_faults.count("DescribeCluster") == 2


def test_lifecycle_actions_record_heartbeats_and_who_completed_them(aws: AwsSeed) -> None:
    (iid,) = aws.asg("ng-blue", size=1)
    aws.start_lifecycle_action("ng-blue", "drain", iid)
    asc = aws.lambda_session(ROLE).client("autoscaling", endpoint_url=aws.endpoint)
    asc.record_lifecycle_action_heartbeat(AutoScalingGroupName="ng-blue", LifecycleHookName="drain", InstanceId=iid)
    aws.complete_lifecycle_action_as("operator", "ng-blue", "drain", iid, "ABANDON")
    (action,) = aws.lifecycle_actions()
    assert (action["state"], action["result"], action["heartbeats"]) == ("COMPLETED", "ABANDON", 1)
    assert action["completed_by"] == aws.role_arn("operator") and action["completed_with"] == "instance-id"
    assert time.time() - 60 < action["last_heartbeat"] <= action["completed_at"]


def test_a_lifecycle_action_left_alone_times_out_and_says_so(aws: AwsSeed, k8s: KubeScenario) -> None:
    (iid,) = aws.asg("ng-blue", size=1, hooks=[{"name": "drain", "heartbeat_timeout": 1}])
    aws.start_lifecycle_action("ng-blue", "drain", iid)
    action = k8s.wait_for(
        lambda: next((a for a in aws.lifecycle_actions() if a["state"] != "ACTIVE"), None), timeout=30
    )
    # the hook's DefaultResult applies (ABANDON unless the hook says otherwise)
    assert (action["state"], action["completed_by"], action["result"]) == ("TIMED_OUT", "timeout", "ABANDON")


def test_etcd_compaction_makes_a_list_at_an_older_version_answer_410_and_runs_on_a_schedule(
    testbed: Testbed, k8s: KubeScenario
) -> None:
    old = k8s.core.create_namespaced_config_map(k8s.ns, {"metadata": {"name": "before"}}).metadata.resource_version
    k8s.core.create_namespaced_config_map(k8s.ns, {"metadata": {"name": "after"}})
    exact = {"resource_version": old, "resource_version_match": "Exact"}  # read from etcd at that revision
    assert [c.metadata.name for c in k8s.core.list_namespaced_config_map(k8s.ns, **exact).items] == ["before"]
    compactor = Compactor(testbed, every=0.5)
    compacted = compactor.compact()
    assert compacted is not None and compacted > int(old)

    def refused() -> int:
        try:
            k8s.core.list_namespaced_config_map(k8s.ns, **exact)
        except ApiException as exc:
            return int(exc.status)
        return 0

    # the apiserver's cache drops its list snapshots below the compaction at its next poll (every 15 s)
    assert k8s.wait_for(refused, timeout=60, interval=1, what="a LIST at a compacted version refused") == 410
    with compactor:  # on a schedule: each compaction at a newer revision than the one before
        k8s.wait_for(lambda: len(compactor.revisions) >= 3, timeout=60, what="3 compactions", interval=0.5)
    assert compactor.revisions == sorted(set(compactor.revisions)) and not compactor.errors, compactor.errors

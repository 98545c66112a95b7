"""Smoke tests that prove the bed is real: each would fail against a fake (a mocked client, an apiserver without
controllers/scheduler/kwok, an authenticator that accepts anything, or moto without the lifecycle extension)."""

from __future__ import annotations

import base64
import datetime as dt
import time
from typing import Any
from unittest import mock

import boto3
import botocore.auth
import pytest
from botocore.exceptions import ClientError
from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed
from testbed.binaries import selected_kube_version
from testbed.kube import KubeScenario

pytestmark = pytest.mark.integration


def _evict(k8s: KubeScenario, pod: Any) -> None:
    k8s.core.create_namespaced_pod_eviction(
        pod.metadata.name,
        k8s.ns,
        client.V1Eviction(
            api_version="policy/v1",
            kind="Eviction",
            metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace=k8s.ns),
        ),
    )


def test_the_control_plane_runs_the_selected_kubernetes_version(testbed: Testbed) -> None:
    """DRAIN_TESTBED_KUBE_VERSION (else the build's default) is the version the apiserver reports."""
    api = testbed.admin_api_client()
    with api:
        assert client.VersionApi(api).get_code().git_version == selected_kube_version()


def test_two_nodes_ready(k8s: KubeScenario) -> None:
    nodes = k8s.add_nodes(2)
    listed = k8s.core.list_node(label_selector=f"drain-test/run={k8s.run_id}").items
    assert sorted(n.metadata.name for n in listed) == sorted(nodes)
    for n in listed:
        assert any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
        assert int(n.status.allocatable["pods"]) > 0


def test_deployment_pods_scheduled_running_ready(k8s: KubeScenario) -> None:
    nodes = k8s.add_nodes(2)
    k8s.deployment("web", 3)
    pods = k8s.wait_pods_ready("app=web", 3)
    # placed by the real scheduler onto this test's nodes, made Running+Ready by kwok
    assert {p.spec.node_name for p in pods} <= set(nodes)
    assert all(p.status.phase == "Running" and p.status.pod_ip for p in pods)


def test_pdb_blocks_then_allows_eviction_and_replacement_lands_elsewhere(k8s: KubeScenario) -> None:
    a, b = k8s.add_nodes(2)
    k8s.deployment("web", 3, grace=3)
    k8s.wait_pods_ready("app=web", 3)
    k8s.pdb("web", {"app": "web"}, min_available=3)
    k8s.wait_pdb("web", disruptions_allowed=0)

    # cordon node a so the replacement must go to b
    k8s.core.patch_node(a, {"spec": {"unschedulable": True}})
    victim = next((p for p in k8s.pods("app=web") if p.spec.node_name == a), None)
    if victim is None:  # the scheduler put all three on b: move the test's target
        k8s.core.patch_node(a, {"spec": {"unschedulable": False}})
        k8s.core.patch_node(b, {"spec": {"unschedulable": True}})
        a, b = b, a
        victim = next(p for p in k8s.pods("app=web") if p.spec.node_name == a)

    with pytest.raises(ApiException) as blocked:
        _evict(k8s, victim)
    assert blocked.value.status == 429
    assert "DisruptionBudget" in (blocked.value.body or "")

    k8s.policy.patch_namespaced_pod_disruption_budget("web", k8s.ns, {"spec": {"minAvailable": 2}})
    k8s.wait_pdb("web", disruptions_allowed=1)
    started = time.monotonic()
    _evict(k8s, victim)  # 201: raises otherwise

    def gone() -> bool:
        try:
            p = k8s.core.read_namespaced_pod(victim.metadata.name, k8s.ns)
        except ApiException as e:
            return e.status == 404
        return p.metadata.uid != victim.metadata.uid

    k8s.wait_for(gone, timeout=30, what="evicted pod deleted")
    elapsed = time.monotonic() - started
    # kwok removes the pod when its 3 s grace period has passed, not at once
    assert elapsed >= 2.0, f"pod vanished after {elapsed:.2f} s, before its grace period"
    pods = k8s.wait_pods_ready("app=web", 3)
    replacement = [p for p in pods if p.metadata.uid != victim.metadata.uid and p.spec.node_name == b]
    assert replacement, "the replacement should be scheduled onto the other node and become Ready"


def test_daemonset_pod_per_node(k8s: KubeScenario) -> None:
    nodes = k8s.add_nodes(2)
    k8s.daemonset("agent")

    # the DaemonSet targets every node of the cluster; count the ones on this test's nodes
    def on_mine() -> list[Any]:
        pods = [p for p in k8s.pods("app=agent") if p.spec.node_name in nodes and k8s.pod_ready(p)]
        return pods if len(pods) == 2 else []

    pods = k8s.wait_for(on_mine, timeout=60, what="a DaemonSet pod on each node")
    assert {p.spec.node_name for p in pods} == set(nodes)


def test_pod_with_finalizer_hangs_terminating_until_released(k8s: KubeScenario) -> None:
    (node,) = k8s.add_nodes(1)
    k8s.bare_pod("held", node=node, metadata_extra={"finalizers": ["drain-test/hold"]})
    k8s.wait_for(lambda: k8s.pod_ready(k8s.core.read_namespaced_pod("held", k8s.ns)), what="pod Ready")
    k8s.core.delete_namespaced_pod("held", k8s.ns, grace_period_seconds=1)
    time.sleep(2.5)  # deliberately past the grace period: the pod must still be there
    held = k8s.core.read_namespaced_pod("held", k8s.ns)
    assert held.metadata.deletion_timestamp is not None
    k8s.core.patch_namespaced_pod("held", k8s.ns, {"metadata": {"finalizers": None}})

    def gone() -> bool:
        try:
            k8s.core.read_namespaced_pod("held", k8s.ns)
        except ApiException as e:
            return e.status == 404
        return False

    k8s.wait_for(gone, timeout=20, what="released pod deleted")


# ---- EKS-style token authentication ------------------------------------------------------------------------------
def _token(session: boto3.Session, cluster: str, endpoint: str) -> str:
    sts = session.client("sts", endpoint_url=endpoint)

    def stash(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if "x-k8s-aws-id" in params:
            context["x-k8s-aws-id"] = params.pop("x-k8s-aws-id")

    def inject(request: Any, **_: Any) -> None:
        if "x-k8s-aws-id" in request.context:
            request.headers["x-k8s-aws-id"] = request.context["x-k8s-aws-id"]

    sts.meta.events.register("provide-client-params.sts.GetCallerIdentity", stash)
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", inject)
    url = sts.generate_presigned_url(
        "get_caller_identity", Params={"x-k8s-aws-id": cluster}, ExpiresIn=60, HttpMethod="GET"
    )
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def _core_with_token(bed: Testbed, token: str) -> client.CoreV1Api:
    cfg = client.Configuration(host=bed.server)
    cfg.ssl_ca_cert = str(bed.dir / "pki" / "ca.crt")
    cfg.api_key = {"authorization": "Bearer " + token}
    return client.CoreV1Api(client.ApiClient(cfg))


def test_mapped_role_in_rbac_group_may_list_nodes(testbed: Testbed, aws: AwsSeed) -> None:
    aws.eks_cluster("blue")
    testbed.put_access_entry("blue", aws.role_arn(), "drainer", ["drain-orchestrator"])
    core = _core_with_token(testbed, _token(aws.lambda_session(), "blue", aws.endpoint))
    core.list_node(limit=1)  # allowed by infra/k8s/rbac.yaml
    with pytest.raises(ApiException) as denied:
        core.list_namespaced_secret("default")  # not in the shipped ClusterRole
    assert denied.value.status == 403
    last = testbed.authentications()[-1]
    assert last["allowed"] and last["cluster"] == "blue" and last["arn"] == aws.role_arn()


def test_unknown_role_gets_401(testbed: Testbed, aws: AwsSeed) -> None:
    aws.eks_cluster("blue")
    testbed.put_access_entry("blue", aws.role_arn(), "drainer", ["drain-orchestrator"])
    core = _core_with_token(testbed, _token(aws.lambda_session("someone-else"), "blue", aws.endpoint))
    with pytest.raises(ApiException) as denied:
        core.list_node(limit=1)
    assert denied.value.status == 401
    assert "no access entry" in testbed.authentications()[-1]["reason"]


def test_token_for_another_cluster_gets_401(testbed: Testbed, aws: AwsSeed) -> None:
    aws.eks_cluster("blue")
    testbed.put_access_entry("blue", aws.role_arn(), "drainer", ["drain-orchestrator"])
    core = _core_with_token(testbed, _token(aws.lambda_session(), "not-served", aws.endpoint))
    with pytest.raises(ApiException) as denied:
        core.list_node(limit=1)
    assert denied.value.status == 401


def test_mapped_role_without_binding_gets_403(testbed: Testbed, aws: AwsSeed) -> None:
    aws.eks_cluster("blue")
    testbed.put_access_entry("blue", aws.role_arn(), "viewer", ["some-group-without-binding"])
    core = _core_with_token(testbed, _token(aws.lambda_session(), "blue", aws.endpoint))
    with pytest.raises(ApiException) as denied:
        core.list_node(limit=1)
    assert denied.value.status == 403


def test_token_older_than_15_minutes_gets_401(testbed: Testbed, aws: AwsSeed) -> None:
    aws.eks_cluster("blue")
    testbed.put_access_entry("blue", aws.role_arn(), "drainer", ["drain-orchestrator"])
    session = aws.lambda_session()
    past = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=16)
    real = botocore.auth.datetime.datetime

    class Past(real):  # type: ignore[misc,valid-type]
        @classmethod
        def utcnow(cls) -> dt.datetime:
            return past

        @classmethod
        def now(cls, tz: Any = None) -> dt.datetime:
            return past.replace(tzinfo=tz) if tz else past

    with mock.patch.object(botocore.auth.datetime, "datetime", Past):
        old = _token(session, "blue", aws.endpoint)
    core = _core_with_token(testbed, old)
    with pytest.raises(ApiException) as denied:
        core.list_node(limit=1)
    assert denied.value.status == 401
    assert "expired" in testbed.authentications()[-1]["reason"]
    # the same identity with a fresh token is allowed: the expiry, not the identity, was refused
    _core_with_token(testbed, _token(session, "blue", aws.endpoint)).list_node(limit=1)


# ---- lifecycle-action extension ----------------------------------------------------------------------------------
def test_completing_a_lifecycle_action_twice_gives_validation_error(aws: AwsSeed) -> None:
    (iid,) = aws.asg("ng-1", size=1)
    token = aws.start_lifecycle_action("ng-1", "drain", iid)
    asc = aws.client("autoscaling")
    asc.record_lifecycle_action_heartbeat(AutoScalingGroupName="ng-1", LifecycleHookName="drain", InstanceId=iid)
    asc.complete_lifecycle_action(
        AutoScalingGroupName="ng-1",
        LifecycleHookName="drain",
        LifecycleActionToken=token,
        LifecycleActionResult="CONTINUE",
    )
    with pytest.raises(ClientError) as again:
        asc.complete_lifecycle_action(
            AutoScalingGroupName="ng-1",
            LifecycleHookName="drain",
            LifecycleActionToken=token,
            LifecycleActionResult="CONTINUE",
        )
    assert again.value.response["Error"]["Code"] == "ValidationError"
    assert again.value.response["Error"]["Message"] == f"No active Lifecycle Action found with token {token}"
    with pytest.raises(ClientError) as by_id:
        asc.record_lifecycle_action_heartbeat(AutoScalingGroupName="ng-1", LifecycleHookName="drain", InstanceId=iid)
    assert by_id.value.response["Error"]["Message"] == f"No active Lifecycle Action found with instance ID {iid}"
    (action,) = aws.lifecycle_actions()
    assert action["state"] == "COMPLETED" and action["result"] == "CONTINUE" and action["heartbeats"] == 1


def test_eks_cluster_points_at_local_apiserver(testbed: Testbed, aws: AwsSeed) -> None:
    cluster = aws.eks_cluster("blue")
    assert cluster["endpoint"] == testbed.server
    assert base64.b64decode(cluster["certificateAuthority"]["data"]) == testbed.ca_pem


def test_instances_match_kwok_nodes(k8s: KubeScenario, aws: AwsSeed) -> None:
    ids = aws.asg("ng-1", size=2, tags={"kubernetes.io/cluster/blue": "owned"})
    names = aws.nodes_for(k8s, ids)
    for iid, name in zip(ids, names, strict=True):
        inst = aws.describe(iid)
        node = k8s.core.read_node(name)
        assert node.metadata.name == inst["PrivateDnsName"]
        assert node.spec.provider_id == f"aws:///{inst['Placement']['AvailabilityZone']}/{iid}"
        assert {"Key": "aws:autoscaling:groupName", "Value": "ng-1"} in inst["Tags"]


def test_cluster_up_lists_ready_nodes_and_cluster_down_leaves_no_process(tmp_path: Any) -> None:
    """What `make cluster-up` / `make cluster-down` run, on a bed of its own; in a directory an earlier bed used, the
    new cluster's audit log starts empty (the old one's requests, and the files it was rotated into, are gone)."""
    import json
    import subprocess
    import sys

    from testbed.bed import REPO
    from testbed.procs import State, pid_alive

    d = tmp_path / "bed"
    d.mkdir()
    stale = '{"stage":"ResponseComplete","auditID":"from-an-earlier-bed"}\n'
    (d / "audit.jsonl").write_text(stale)
    (d / "audit-2026-12-01T10-00-00.000.jsonl").write_text(stale)
    up = subprocess.run(
        [sys.executable, "-m", "testbed", "up", "--dir", str(d)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert up.returncode == 0, up.stdout + up.stderr
    procs = State.load(d / "state.json").procs
    assert [p.name for p in d.glob("audit-*.jsonl")] == []
    log = d / "audit.jsonl"  # created at the first request it records
    assert not log.exists() or "from-an-earlier-bed" not in log.read_text()
    try:
        nodes = subprocess.run(
            ["kubectl", "--kubeconfig", str(d / "kubeconfig"), "get", "nodes", "-o", "json"],
            capture_output=True,
            text=True,
            check=True,
        )
        items = json.loads(nodes.stdout)["items"]
        assert len(items) == 2
        assert all(
            any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"]) for n in items
        )
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "testbed", "down", "--dir", str(d)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
    assert down.returncode == 0, down.stderr
    assert len(procs) == 6
    assert not [p.name for p in procs if pid_alive(p)]


def test_a_component_killed_while_the_bed_comes_up_costs_one_more_start(tmp_path: Any) -> None:
    """A component that dies during start (here the apiserver, killed from outside) is reported with its signal,
    and the bed starts once more on fresh ports instead of failing every test of the session."""
    import os
    import signal
    import ssl
    import threading

    from testbed.procs import State, http_ok

    d = tmp_path / "bed"
    said: list[str] = []
    started: list[Testbed] = []
    failed: list[BaseException] = []

    def start() -> None:
        try:
            started.append(Testbed.start(d, log=said.append))
        except BaseException as e:  # reported below, with what the bed said
            failed.append(e)

    t = threading.Thread(target=start, daemon=True)
    t.start()
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline and t.is_alive():
        try:
            procs = State.load(d / "state.json").procs
        except (FileNotFoundError, ValueError):
            procs = []
        apiserver = next((p for p in procs if p.name == "kube-apiserver"), None)
        if apiserver is not None:
            os.kill(apiserver.pid, signal.SIGKILL)
            killed = apiserver.pid
        time.sleep(0.02)
    t.join(timeout=120)
    assert not failed, f"{failed[0]!r}; the bed said: {said}"
    assert killed is not None and started, f"the apiserver was never seen starting; the bed said: {said}"
    bed = started[0]
    try:
        assert any("kube-apiserver exited while the bed came up (killed by SIGKILL)" in s for s in said), said
        assert (d / "logs.failed-start" / "kube-apiserver.log").exists()
        apiserver = next(p for p in bed.state.procs if p.name == "kube-apiserver")
        assert apiserver.pid != killed
        assert http_ok(f"{bed.server}/readyz", ssl.create_default_context(cafile=str(d / "pki" / "ca.crt")))
    finally:
        bed.stop()

"""Load balancers on the test bed: target groups in the AWS emulator (draining for their deregistration delay,
aws/elbv2.py) and a stand-in for the AWS Load Balancer Controller, for the demo, the benchmarks and the tests."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from kubernetes.client.rest import ApiException

from testbed.aws_seed import AwsSeed
from testbed.kube import KubeScenario

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
EXCLUDE_LB_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"


def target_group(
    aws: AwsSeed, name: str, *, kind: str = "instance", cluster: str | None = "blue", delay: int = 5
) -> str:
    """A target group (tagged as the controller tags its own when ``cluster``) draining for ``delay`` seconds."""
    elbv2, ec2 = aws.client("elbv2"), aws.client("ec2")
    vpc = ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    tags = [{"Key": CLUSTER_TAG, "Value": cluster}] if cluster else []
    kw: dict[str, Any] = {"Tags": tags} if tags else {}
    arn: str = elbv2.create_target_group(Name=name, Protocol="TCP", Port=80, VpcId=vpc, TargetType=kind, **kw)[
        "TargetGroups"
    ][0]["TargetGroupArn"]
    elbv2.modify_target_group_attributes(
        TargetGroupArn=arn, Attributes=[{"Key": "deregistration_delay.timeout_seconds", "Value": str(delay)}]
    )
    return arn


def register(aws: AwsSeed, arn: str, ids: list[str]) -> None:
    aws.client("elbv2").register_targets(TargetGroupArn=arn, Targets=[{"Id": i, "Port": 80} for i in ids])


def target_states(aws: AwsSeed, arn: str) -> dict[str, str]:
    res = aws.client("elbv2").describe_target_health(TargetGroupArn=arn)
    return {d["Target"]["Id"]: d["TargetHealth"]["State"] for d in res["TargetHealthDescriptions"]}


def elbv2_calls(aws: AwsSeed, *, reset: bool = False) -> dict[str, int]:
    return dict(aws._post("/_testbed/elbv2/calls/reset" if reset else "/_testbed/elbv2/calls"))


class Actor:
    """A background loop (a controller's stand-in) polling every 0.2 s until stopped; errors end the test."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def tick(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except BaseException as exc:  # surfaced by stop()
                self.error = exc
                return
            self._stop.wait(0.2)

    def __enter__(self) -> Actor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self.error is not None:
            raise self.error


class LoadBalancerControllerStandIn(Actor):
    """What the AWS Load Balancer Controller does for a drain: deregister an instance from the cluster's
    instance-mode target groups once its node carries the exclusion label, and deregister ip-mode targets whose
    pod is gone (or terminating)."""

    def __init__(self, aws: AwsSeed, k8s: KubeScenario, nodes: dict[str, str], groups: list[str]) -> None:
        super().__init__()
        self.aws, self.k8s, self.nodes, self.groups = aws, k8s, nodes, groups  # nodes: node name -> instance id
        self.deregistered: list[tuple[str, str, float]] = []
        self.owner: dict[str, str] = {}  # ip target -> uid of the pod it was registered for

    def tick(self) -> None:
        elbv2 = self.aws.client("elbv2")
        excluded = set()
        for node, iid in self.nodes.items():
            with contextlib.suppress(ApiException):
                if EXCLUDE_LB_LABEL in (self.k8s.core.read_node(node).metadata.labels or {}):
                    excluded.add(iid)
        pods = [p for p in self.k8s.core.list_namespaced_pod(self.k8s.ns).items if p.status.pod_ip]
        live = {p.metadata.uid for p in pods if p.metadata.deletion_timestamp is None}
        for p in pods:  # a target belongs to the pod it was registered for (kwok may reuse an IP on another node)
            self.owner.setdefault(p.status.pod_ip, p.metadata.uid)
        for arn in self.groups:
            tg = elbv2.describe_target_groups(TargetGroupArns=[arn])["TargetGroups"][0]
            for target, state in target_states(self.aws, arn).items():
                if state == "draining":
                    continue
                gone = target in excluded if tg["TargetType"] == "instance" else self.owner.get(target) not in live
                if gone:
                    elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": target, "Port": 80}])
                    self.deregistered.append((arn, target, time.time()))

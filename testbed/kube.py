"""Per-test Kubernetes scenario on the shared control plane: a fresh namespace, uniquely named nodes (kwok makes them
Ready) and small builders for workloads. Everything a test creates is removed at teardown."""

from __future__ import annotations

import contextlib
import functools
import secrets
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client
from kubernetes.client.rest import ApiException

T = TypeVar("T")
RUN_LABEL = "drain-test/run"
NODE_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
NOT_READY_TAINT = "node.kubernetes.io/not-ready"  # TaintNodesByCondition admission, on every new node until Ready
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"  # the node lifecycle controller's, once it sees a cordon

# how long a scenario's set-up waits for the bed (nodes Ready and untainted, pods scheduled and Ready): seconds on an
# idle machine, but kwok's status, the node lifecycle controller's untaint and the scheduler have taken over 60 s
# under a full suite's load; a set-up wait says nothing about the product, so it is generous
SETUP_SECONDS = 180


class KubeScenario:
    def __init__(self, api_client: Any, *, prefix: str = "t") -> None:
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.policy = client.PolicyV1Api(api_client)
        self.run_id = secrets.token_hex(3)
        self.ns = f"{prefix}-{self.run_id}"
        self.nodes: list[str] = []
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=self.ns)))

    # ---- polling ------------------------------------------------------------------------------------------------
    def wait_for(
        self, predicate: Callable[[], T], *, timeout: float = 60, interval: float = 0.2, what: str = "condition"
    ) -> T:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout} s waiting for {what} (last value: {last!r})")

    # ---- nodes --------------------------------------------------------------------------------------------------
    def add_nodes(
        self,
        count: int,
        *,
        zone: str = "us-east-1a",
        names: list[str] | None = None,
        provider_ids: list[str] | None = None,
        labels: dict[str, str] | None = None,
        wait_ready: bool = True,
    ) -> list[str]:
        created = []
        for i in range(count):
            name = names[i] if names else f"node-{self.run_id}-{len(self.nodes) + i}"
            pid = provider_ids[i] if provider_ids else f"aws:///{zone}/i-{secrets.token_hex(8)}"
            node = client.V1Node(
                metadata=client.V1ObjectMeta(
                    name=name,
                    labels={
                        RUN_LABEL: self.run_id,
                        "kubernetes.io/hostname": name,
                        "topology.kubernetes.io/zone": zone,
                        "type": "kwok",
                        **(labels or {}),
                    },
                    annotations={"kwok.x-k8s.io/node": "fake"},
                ),
                spec=client.V1NodeSpec(provider_id=pid),
            )
            self.core.create_node(node)
            created.append(name)
        self.nodes.extend(created)
        if wait_ready:
            for name in created:
                self.wait_for(lambda n=name: self.node_schedulable(n), timeout=SETUP_SECONDS, what=f"node {name} Ready")
                # an m5.2xlarge-like node with EKS' usual 110-pod limit (kwok's initializer would say 1M pods);
                # patched once Ready, because kwok's initializer may still overwrite status until then
                self.core.patch_node_status(name, {"status": {"capacity": NODE_CAPACITY, "allocatable": NODE_CAPACITY}})
        return created

    def node_ready(self, name: str) -> bool:
        node = self.core.read_node(name)
        return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))

    def node_tainted(self, name: str, key: str) -> bool:
        return any(t.key == key for t in self.core.read_node(name).spec.taints or [])

    def node_schedulable(self, name: str) -> bool:
        """Ready, and the node lifecycle controller took back the not-ready taint the apiserver's admission gave the
        new node (as on EKS: the scheduler places nothing there until then)."""
        node = self.core.read_node(name)
        ready = any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))
        return ready and not any(t.key == NOT_READY_TAINT for t in node.spec.taints or [])

    # ---- pods ---------------------------------------------------------------------------------------------------
    def pods(self, label_selector: str = "", node: str | None = None) -> list[Any]:
        kw: dict[str, Any] = {"label_selector": label_selector}
        if node:
            kw["field_selector"] = f"spec.nodeName={node}"
        return list(self.core.list_namespaced_pod(self.ns, **kw).items)

    @staticmethod
    def pod_ready(pod: Any) -> bool:
        return (
            pod.metadata.deletion_timestamp is None
            and pod.status.phase == "Running"
            and any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))
        )

    def wait_pods_ready(self, label_selector: str, count: int, timeout: float = SETUP_SECONDS) -> list[Any]:
        def ready() -> list[Any]:
            pods = [p for p in self.pods(label_selector) if self.pod_ready(p)]
            return pods if len(pods) >= count else []

        return self.wait_for(ready, timeout=timeout, what=f"{count} Ready pods matching {label_selector!r}")

    def pod_spec(
        self,
        *,
        node: str | None = None,
        nodes: list[str] | None = None,
        grace: int = 0,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A pod spec pinned to this scenario's nodes (or to ``node`` / ``nodes``)."""
        spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
        }
        if node:
            spec["nodeName"] = node
        else:
            targets = nodes or self.nodes
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": targets}
                                ]
                            }
                        ]
                    }
                }
            }
        spec.update(extra or {})
        return spec

    def deployment(
        self,
        name: str,
        replicas: int,
        *,
        nodes: list[str] | None = None,
        grace: int = 0,
        labels: dict[str, str] | None = None,
        spec_extra: dict[str, Any] | None = None,
        max_unavailable: int | str | None = None,
    ) -> dict[str, Any]:
        labels = {"app": name, **(labels or {})}
        body: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": self.ns, "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": self.pod_spec(nodes=nodes, grace=grace, extra=spec_extra),
                },
            },
        }
        if max_unavailable is not None:
            body["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}}
        return self.apps.create_namespaced_deployment(self.ns, body)  # type: ignore[no-any-return]

    def deployment_on(self, name: str, replicas: int, nodes: list[str], spare: str, *, grace: int = 0) -> list[Any]:
        """A Deployment whose pods all start on ``nodes`` while ``spare`` is cordoned, and whose replacements may
        then go to ``spare`` (uncordoned once the pods are Ready): the shape of a node about to be drained."""
        self.core.patch_node(spare, {"spec": {"unschedulable": True}})
        # the scheduler places pods from its cache of the nodes: wait until the control plane shows the cordon (the node
        # lifecycle controller's taint, written from the same watch), or a pod may still land on the spare under load
        self.wait_for(
            functools.partial(self.node_tainted, spare, UNSCHEDULABLE_TAINT),
            timeout=SETUP_SECONDS,
            what="the spare's cordon seen by the control plane",
        )
        self.deployment(name, replicas, nodes=[*nodes, spare], grace=grace)
        pods = self.wait_pods_ready(f"app={name}", replicas)
        misplaced = [p.metadata.name for p in pods if p.spec.node_name not in nodes]
        assert misplaced == [], f"{misplaced} landed outside {nodes}"
        self.core.patch_node(spare, {"spec": {"unschedulable": False}})
        return pods

    def daemonset(self, name: str, *, grace: int = 0) -> Any:
        labels = {"app": name}
        body = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": self.pod_spec(grace=grace)},
            },
        }
        return self.apps.create_namespaced_daemon_set(self.ns, body)

    def pdb(
        self,
        name: str,
        selector: dict[str, str],
        *,
        min_available: int | str | None = None,
        max_unavailable: int | str | None = None,
    ) -> Any:
        spec: dict[str, Any] = {"selector": {"matchLabels": selector}}
        if min_available is not None:
            spec["minAvailable"] = min_available
        if max_unavailable is not None:
            spec["maxUnavailable"] = max_unavailable
        body = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": spec,
        }
        return self.policy.create_namespaced_pod_disruption_budget(self.ns, body)

    def wait_pdb(self, name: str, *, disruptions_allowed: int, timeout: float = 60) -> Any:
        """Wait until the disruption controller has processed the PDB and allows exactly N disruptions."""

        def ok() -> Any:
            p = self.policy.read_namespaced_pod_disruption_budget(name, self.ns)
            st = p.status
            if st and st.observed_generation == p.metadata.generation and st.disruptions_allowed == disruptions_allowed:
                return p
            return None

        return self.wait_for(ok, timeout=timeout, what=f"PDB {name} disruptionsAllowed={disruptions_allowed}")

    def bare_pod(
        self,
        name: str,
        *,
        node: str,
        grace: int = 0,
        spec_extra: dict[str, Any] | None = None,
        metadata_extra: dict[str, Any] | None = None,
    ) -> Any:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.ns, **(metadata_extra or {})},
            "spec": self.pod_spec(node=node, grace=grace, extra=spec_extra),
        }
        return self.core.create_namespaced_pod(self.ns, body)

    # ---- teardown -----------------------------------------------------------------------------------------------
    def cleanup(self) -> None:
        # release pods a test made hang in Terminating, so namespace deletion can finish
        with contextlib.suppress(ApiException):
            for p in self.core.list_namespaced_pod(self.ns).items:
                if p.metadata.finalizers:
                    with contextlib.suppress(ApiException):
                        self.core.patch_namespaced_pod(p.metadata.name, self.ns, {"metadata": {"finalizers": None}})
        with contextlib.suppress(ApiException):
            self.core.delete_namespace(self.ns, grace_period_seconds=0)
        for n in self.nodes:
            with contextlib.suppress(ApiException):
                self.core.delete_node(n)

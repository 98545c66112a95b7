"""Helpers for the surge-before-evict tests: opting a Deployment in, an HPA, a StatefulSet, and a watch that
counts a workload's Ready pods after every change the apiserver reports."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import client, watch

from drain_orchestrator.drain.surge import SURGE_ANNOTATION
from testbed.kube import KubeScenario


def opt_in(k8s: KubeScenario, deployment: str) -> None:
    k8s.apps.patch_namespaced_deployment(deployment, k8s.ns, {"metadata": {"annotations": {SURGE_ANNOTATION: "true"}}})


def hpa(k8s: KubeScenario, deployment: str, *, min_replicas: int, max_replicas: int) -> None:
    body = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": deployment, "namespace": k8s.ns},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
        },
    }
    client.AutoscalingV2Api(k8s.api_client).create_namespaced_horizontal_pod_autoscaler(k8s.ns, body)


def read_hpa(k8s: KubeScenario, name: str) -> Any:
    return client.AutoscalingV2Api(k8s.api_client).read_namespaced_horizontal_pod_autoscaler(name, k8s.ns)


def statefulset(k8s: KubeScenario, name: str, node: str) -> None:
    labels = {"app": name}
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": k8s.ns},
        "spec": {
            "replicas": 1,
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": k8s.pod_spec(nodes=[node])},
        },
    }
    k8s.apps.create_namespaced_stateful_set(k8s.ns, body)


def surge_annotations(obj: Any) -> dict[str, str]:
    return {k: v for k, v in (obj.metadata.annotations or {}).items() if k.startswith(SURGE_ANNOTATION + "-")}


class ReadyWatch:
    """Watches the pods of ``selector`` from a LIST taken before the drain: ``counts`` is the number of Ready,
    non-terminating pods after the LIST and after every watch event, in the apiserver's order (resourceVersion),
    so "at least one Ready at every moment" is read from the API's own history, not from timing."""

    def __init__(self, testbed: Any, k8s: KubeScenario, selector: str) -> None:
        self.api = testbed.admin_api_client()
        self.core = client.CoreV1Api(self.api)
        self.ns, self.selector = k8s.ns, selector
        listed = self.core.list_namespaced_pod(self.ns, label_selector=selector)
        self.ready = {p.metadata.name: KubeScenario.pod_ready(p) for p in listed.items}
        self.counts = [sum(self.ready.values())]
        self.seen: set[str] = set(self.ready)
        self.rv = listed.metadata.resource_version
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ReadyWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._watch.stop()
        self._thread.join(timeout=15)
        self.api.close()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                stream = self._watch.stream(
                    self.core.list_namespaced_pod,
                    self.ns,
                    label_selector=self.selector,
                    resource_version=self.rv,
                    timeout_seconds=5,
                )
                for event in stream:
                    pod = event["object"]
                    self.rv = pod.metadata.resource_version
                    name = pod.metadata.name
                    self.seen.add(name)
                    if event["type"] == "DELETED":
                        self.ready.pop(name, None)
                    else:
                        self.ready[name] = KubeScenario.pod_ready(pod)
                    self.counts.append(sum(self.ready.values()))
        except BaseException as exc:  # surfaced by the test: a broken watch proves nothing
            if not self._stop.is_set():
                self.error = exc


class ReplicasWatch:
    """Every ``spec.replicas`` the apiserver stored for one Deployment, from a LIST before the drain on."""

    def __init__(self, testbed: Any, k8s: KubeScenario, name: str) -> None:
        self.api = testbed.admin_api_client()
        self.apps = client.AppsV1Api(self.api)
        self.ns, self.name = k8s.ns, name
        listed = self.apps.list_namespaced_deployment(self.ns, field_selector=f"metadata.name={name}")
        self.values = [d.spec.replicas for d in listed.items]
        self.rv = listed.metadata.resource_version
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ReplicasWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._watch.stop()
        self._thread.join(timeout=15)
        self.api.close()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for event in self._watch.stream(
                    self.apps.list_namespaced_deployment,
                    self.ns,
                    field_selector=f"metadata.name={self.name}",
                    resource_version=self.rv,
                    timeout_seconds=5,
                ):
                    self.rv = event["object"].metadata.resource_version
                    if event["type"] != "DELETED" and event["object"].spec.replicas != self.values[-1]:
                        self.values.append(event["object"].spec.replicas)
        except BaseException as exc:
            if not self._stop.is_set():
                self.error = exc

"""Admission control that refuses evictions, scoped to one test's namespace so the shared bed is unaffected:
a validating webhook whose server is down (failurePolicy Fail: every eviction answers 500), and a
ValidatingAdmissionPolicy (CEL, no server) that denies every eviction."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client

REG = ("admissionregistration.k8s.io", "v1")
EVICTIONS = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods/eviction"]}


def _in(namespace: str) -> dict[str, Any]:
    return {"matchLabels": {"kubernetes.io/metadata.name": namespace}}


@contextmanager
def webhook_down(k8s: Any, name: str = "evictions.drain-test.io") -> Iterator[str]:
    """A webhook for the namespace's evictions at an address nothing listens on (port 1 on loopback)."""
    api = client.CustomObjectsApi(k8s.api_client)
    config = f"deny-{k8s.ns}"
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": config},
        "webhooks": [
            {
                "name": name,
                "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                "rules": [EVICTIONS],
                "namespaceSelector": _in(k8s.ns),
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 2,
            }
        ],
    }
    api.create_cluster_custom_object(*REG, "validatingwebhookconfigurations", body)
    try:
        yield name
    finally:
        with contextlib.suppress(client.ApiException):
            api.delete_cluster_custom_object(*REG, "validatingwebhookconfigurations", config)


@contextmanager
def evictions_denied(k8s: Any, message: str, probe: str) -> Iterator[str]:
    """A ValidatingAdmissionPolicy (and its binding) denying every eviction in the namespace with ``message``;
    entered once a server-side dry-run eviction of pod ``probe`` is denied (the apiserver loads policies
    asynchronously)."""
    with requests_denied(k8s, message, EVICTIONS, lambda: _denied(k8s, probe)) as name:
        yield name


DEPLOYMENT_WRITES = {
    "apiGroups": ["apps"],
    "apiVersions": ["v1"],
    "operations": ["UPDATE"],
    "resources": ["deployments"],
}


@contextmanager
def requests_denied(k8s: Any, message: str, rule: dict[str, Any], enforced: Callable[[], bool]) -> Iterator[str]:
    """A ValidatingAdmissionPolicy (and its binding) denying the requests ``rule`` matches in the namespace with
    ``message``; entered once ``enforced()`` says so (the apiserver loads policies asynchronously)."""
    api = client.CustomObjectsApi(k8s.api_client)
    name = f"deny-{rule['resources'][0].replace('/', '-')}-{k8s.ns}"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [rule]},
            "validations": [{"expression": "false", "message": message}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": _in(k8s.ns)},
        },
    }
    api.create_cluster_custom_object(*REG, "validatingadmissionpolicies", policy)
    api.create_cluster_custom_object(*REG, "validatingadmissionpolicybindings", binding)
    try:
        k8s.wait_for(enforced, timeout=60, what=f"policy {name} enforced")
        yield name
    finally:
        lift_denial(k8s, name)


def deployment_patch_denied(k8s: Any, name: str) -> bool:
    """A server-side dry-run patch of the Deployment is refused."""
    try:
        k8s.apps.patch_namespaced_deployment(name, k8s.ns, {"metadata": {"labels": {"probe": "x"}}}, dry_run="All")
    except client.ApiException as exc:
        return exc.status in (403, 422)
    return False


def _denied(k8s: Any, pod: str) -> bool:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": k8s.ns}}
    try:
        k8s.core.create_namespaced_pod_eviction(pod, k8s.ns, body, dry_run="All")
    except client.ApiException as exc:
        return exc.status in (403, 422)
    return False


def lift_denial(k8s: Any, name: str) -> None:
    """Remove the policy :func:`evictions_denied` made (its exit finds it gone)."""
    api = client.CustomObjectsApi(k8s.api_client)
    for plural in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
        with contextlib.suppress(client.ApiException):
            api.delete_cluster_custom_object(*REG, plural, name)

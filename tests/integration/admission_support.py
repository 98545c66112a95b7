"""Admission control that refuses evictions, scoped to one test's namespace so the shared bed is unaffected:
a validating webhook whose server is down (failurePolicy Fail: every eviction answers 500), and a
ValidatingAdmissionPolicy (CEL, no server) that denies every eviction."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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
    api = client.CustomObjectsApi(k8s.api_client)
    name = f"no-evict-{k8s.ns}"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [EVICTIONS]},
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
        k8s.wait_for(lambda: _denied(k8s, probe), timeout=60, what=f"policy {name} enforced")
        yield name
    finally:
        for plural in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            with contextlib.suppress(client.ApiException):
                api.delete_cluster_custom_object(*REG, plural, name)


def _denied(k8s: Any, pod: str) -> bool:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": k8s.ns}}
    try:
        k8s.core.create_namespaced_pod_eviction(pod, k8s.ns, body, dry_run="All")
    except client.ApiException as exc:
        return exc.status in (403, 422)
    return False

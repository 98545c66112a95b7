"""The shipped RBAC as the bed applies it, and a run under the RBAC of a configuration without surge before evict.

The bed applies both shipped manifests (testbed/control_plane.py): the function's default SURGE_BLOCKED_PODS
(annotated) is what most tests run. A test of SURGE_BLOCKED_PODS=never runs under what `rbac apply --surge off` leaves
on a cluster: rbac.yaml alone; a test of a cluster whose RBAC was never applied, under none. `without_surge_rights`
and `without_any_rights` delete roles and bindings the way that command does (cli/rbac.py remove_manifest) and apply
them again afterwards, waiting each time until the apiserver's authorizer says so (SubjectAccessReview), since the
authorizer reads RBAC from a cache.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from drain_orchestrator.cli.rbac import apply_manifest, load_manifest, remove_manifest
from drain_orchestrator.kube.rest import Kube
from testbed.control_plane import AUDIT_GROUP, RBAC_FILE, SURGE_RBAC_FILE

Permission = tuple[str, str, str]  # (API group, resource[/subresource], verb)


def granted_permissions(*paths: Path) -> set[Permission]:
    """What the ClusterRoles of ``paths`` grant, as (group, resource, verb)."""
    return {
        (group, resource, verb)
        for path in paths
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc["kind"] == "ClusterRole"
        for rule in doc["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def base_permissions() -> set[Permission]:
    return granted_permissions(RBAC_FILE)


def surge_permissions() -> set[Permission]:
    return granted_permissions(SURGE_RBAC_FILE)


def _group_may(api: Any, verb: str, group: str, resource: str) -> bool:
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user="drain-orchestrator-probe",
            groups=[AUDIT_GROUP],
            resource_attributes=client.V1ResourceAttributes(verb=verb, group=group, resource=resource),
        )
    )
    return bool(client.AuthorizationV1Api(api).create_subject_access_review(review).status.allowed)


def _until(api: Any, probe: tuple[str, str, str], allowed: bool, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while _group_may(api, *probe) != allowed:
        assert time.monotonic() < end, f"the authorizer still says {probe} is {'refused' if allowed else 'allowed'}"
        time.sleep(0.2)


@contextmanager
def without_manifests(testbed: Any, *paths: Path, probe: tuple[str, str, str]) -> Iterator[None]:
    """The bed's cluster without what ``paths`` create, for the duration (deleted as `rbac apply --surge off`
    deletes, applied again afterwards); ``probe`` (verb, group, resource) is a right they alone grant."""
    api = testbed.admin_api_client()
    docs = [d for path in paths for d in load_manifest(path.read_text(), str(path))]
    try:
        removed = remove_manifest(Kube(api_client=api), docs)
        assert {r.outcome for r in removed} == {"deleted"}, removed
        _until(api, probe, allowed=False)
        yield
    finally:
        apply_manifest(Kube(api_client=api), docs)
        _until(api, probe, allowed=True)
        api.close()


def without_surge_rights(testbed: Any) -> Any:
    """The bed's cluster as `rbac apply --surge off` leaves it: surge's role and binding gone."""
    return without_manifests(testbed, SURGE_RBAC_FILE, probe=("patch", "apps", "deployments"))


def without_any_rights(testbed: Any) -> Any:
    """A cluster whose RBAC was never applied: the function's group may do nothing."""
    return without_manifests(testbed, RBAC_FILE, SURGE_RBAC_FILE, probe=("get", "", "nodes"))

"""Files shipped with the construct (in the wheel as package data)."""

from __future__ import annotations

from pathlib import Path

# The Kubernetes RBAC to apply on each served cluster: the group the access entries map the function's role to.
RBAC_MANIFEST = Path(__file__).resolve().parent / "k8s" / "rbac.yaml"
# ... and, where surge before evict is on (SURGE_BLOCKED_PODS is not never), its rights: patch Deployments and HPAs.
RBAC_SURGE_MANIFEST = Path(__file__).resolve().parent / "k8s" / "rbac-surge.yaml"

"""CDK app and the reusable `DrainOrchestrator` construct for EKS Drain Orchestrator.

Installed as the package `drain_orchestrator_cdk` (infra/pyproject.toml):
`from drain_orchestrator_cdk import DrainOrchestrator, OrchestratorConfig`. Loaded lazily, so `config` or `bundle`
alone do not start jsii.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> module that defines it
_EXPORTS = {
    "DrainOrchestrator": "construct",
    "OrchestratorConfig": "config",
    "KindActions": "config",
    "VpcPlacement": "config",
    "ConfigError": "config",
    "config_from_context": "config",
    "CONTEXT_KEYS": "config",
    "WORKFLOW_VARIABLES": "config",
    "OrchestratorMetrics": "metrics",
    "KUBERNETES_GROUP": "construct",
    "ALIAS_NAME": "construct",
    "METRICS_NAMESPACE": "environment",
    "RBAC_MANIFEST": "resources",
    "RBAC_SURGE_MANIFEST": "resources",
}

__all__ = [
    "ALIAS_NAME",
    "CONTEXT_KEYS",
    "KUBERNETES_GROUP",
    "METRICS_NAMESPACE",
    "RBAC_MANIFEST",
    "RBAC_SURGE_MANIFEST",
    "WORKFLOW_VARIABLES",
    "ConfigError",
    "DrainOrchestrator",
    "KindActions",
    "OrchestratorConfig",
    "OrchestratorMetrics",
    "VpcPlacement",
    "config_from_context",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

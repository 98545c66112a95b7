"""CDK app and the reusable `DrainOrchestrator` construct for EKS Drain Orchestrator.

Installed as the package `drain_orchestrator_cdk` (infra/pyproject.toml): `from drain_orchestrator_cdk import
DrainOrchestrator, OrchestratorConfig`. Loaded lazily, so `config` or `bundle` alone do not start jsii.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DrainOrchestrator", "OrchestratorConfig"]


def __getattr__(name: str) -> Any:
    if name == "DrainOrchestrator":
        from .construct import DrainOrchestrator  # noqa: PLC0415

        return DrainOrchestrator
    if name == "OrchestratorConfig":
        from .config import OrchestratorConfig  # noqa: PLC0415

        return OrchestratorConfig
    raise AttributeError(name)

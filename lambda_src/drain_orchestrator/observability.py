"""Structured logs and EMF metrics (Powertools), shared by the handler, the workflow steps and the CLI.

Metrics are emitted one EMF line each (``single_metric``) from inside durable steps, so a replayed handler never
counts twice, and each metric carries only its own low-cardinality dimensions (cluster, kind, reason) — never a node
name. The Tracer is imported only when TRACING=true: aws-xray-sdk is the most expensive import of all.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric

NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "DrainOrchestrator")
SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "drain-orchestrator")


class _CurrentStdout(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stdout is now (test runners and the CLI swap it), not the one seen at import."""

    @property
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, _value: Any) -> None:
        return


logger = Logger(service=SERVICE, logger_handler=_CurrentStdout())

COUNT = MetricUnit.Count
SECONDS = MetricUnit.Seconds


def metric(name: str, value: float = 1, unit: MetricUnit = COUNT, **dimensions: str | None) -> None:
    """One EMF line: ``metric("PodsEvicted", 3, cluster="blue", kind="spot-interruption")``."""
    dims = {"service": SERVICE, **{k: v for k, v in dimensions.items() if v}}
    with single_metric(name=name, unit=unit, value=value, namespace=NAMESPACE, default_dimensions=dims):
        pass


def tracer() -> Any | None:
    """A Powertools Tracer when TRACING=true (needs aws-xray-sdk in the bundle), else None."""
    if os.environ.get("TRACING", "").lower() not in ("1", "true", "yes", "on"):
        return None
    from aws_lambda_powertools import Tracer  # noqa: PLC0415 - only when enabled

    return Tracer(service=SERVICE)

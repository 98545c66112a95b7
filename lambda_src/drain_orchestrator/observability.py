"""Structured logs and EMF metrics (Powertools), shared by the handler, the workflow steps and the CLI.

Metrics are emitted one EMF line each from inside durable steps, so a replayed handler never
counts twice, and each metric carries only its own low-cardinality dimensions (cluster, kind, reason) — never a node
name. The Tracer is imported only when TRACING=true: aws-xray-sdk is the most expensive import of all.
Every log line carries ``release``, the version of the code that wrote it (the package's ``__version__``): during an
upgrade, executions that started on the previous release keep running it, and their lines say so.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from drain_orchestrator import __version__
from drain_orchestrator.settings import SettingsError
from drain_orchestrator.workflow_settings import check_log_level

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


def _level() -> str | None:
    # An unknown level would make Powertools raise here, at import: every invocation would fail in Lambda's init,
    # without the variable's name. Log at INFO instead; the settings check fails the execution naming it.
    try:
        return check_log_level(os.environ)
    except SettingsError:
        return "INFO"


logger = Logger(service=SERVICE, logger_handler=_CurrentStdout(), level=_level(), release=__version__)

COUNT = MetricUnit.Count
SECONDS = MetricUnit.Seconds
BYTES = MetricUnit.Bytes


_emit_lock = threading.Lock()


def metric(name: str, value: float = 1, unit: MetricUnit = COUNT, **dimensions: str | None) -> None:
    """One EMF line: ``metric("PodsEvicted", 3, cluster="blue", kind="spot-interruption")``.

    Serialised by Powertools, written as one whole line under a lock: the instances of a Health event are drained
    by concurrent threads, and two interleaved prints would corrupt both EMF documents."""
    emf = EphemeralMetrics(namespace=NAMESPACE, service=SERVICE)
    for key, val in dimensions.items():
        if val:
            emf.add_dimension(name=key, value=val)
    emf.add_metric(name=name, unit=unit, value=value)
    line = json.dumps(emf.serialize_metric_set(), separators=(",", ":")) + "\n"
    with _emit_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def tracer() -> Any | None:
    """A Powertools Tracer when TRACING=true (needs aws-xray-sdk in the bundle), else None."""
    if os.environ.get("TRACING", "").lower() not in ("1", "true", "yes", "on"):
        return None
    from aws_lambda_powertools import Tracer  # noqa: PLC0415 - only when enabled

    return Tracer(service=SERVICE)

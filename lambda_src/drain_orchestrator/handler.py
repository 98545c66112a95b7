"""Lambda entry point: ``drain_orchestrator.handler.handler`` (a durable execution, Python 3.13).

Only what every event needs is imported here; the apiserver transport, the drain engine and the Tracer load inside
the steps that use them (cold start). Settings are validated at cold start and again by the workflow's first step,
so a bad variable fails the execution with its name (and the event reaches the dead-letter queue) instead of
crash-looping the container.
"""

from __future__ import annotations

import contextlib
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution

from drain_orchestrator.observability import logger, tracer
from drain_orchestrator.settings import SettingsError
from drain_orchestrator.workflow import event_flow, runtime

with contextlib.suppress(SettingsError):  # reported per invocation by the workflow's "settings" step
    runtime.load_config()

_tracer = tracer()


@durable_execution
def _durable(event: Any, context: DurableContext) -> dict[str, Any]:
    return event_flow.run(event, context)


def handler(event: Any, lambda_context: Any) -> Any:
    if _tracer is not None:
        return _tracer.capture_lambda_handler(_durable, capture_response=False)(event, lambda_context)
    return _durable(event, lambda_context)


__all__ = ["handler", "logger"]

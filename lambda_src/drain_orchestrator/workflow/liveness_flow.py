"""The liveness check: a schedule (infra/failure_alarms.py, every 30 minutes) invokes the live alias with this input,
and the execution validates its settings (the first step, as for every event), takes one step and counts
``LivenessChecks``. The ``Liveness`` alarm fires when none was counted for an hour.

So a count proves, end to end, what every drain needs before it can start: EventBridge may invoke the alias, the
function's code loads, its settings are valid, durable checkpoints are taken (the step), and its logs reach CloudWatch
(the count is an EMF line in the log group; a disabled customer key stops it). It does not reach a cluster: a
cluster's API or RBAC failing is what the StepsFailing alarm hears, from the drains' own steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_step

from drain_orchestrator.clip import clip
from drain_orchestrator.observability import metric
from drain_orchestrator.workflow.checkpoint import Checkpointed, step_config


@dataclass(frozen=True)
class Alive(Checkpointed):
    now: float


def run(raw_event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    alive: Alive = context.step(liveness_step(), name="liveness", config=step_config(Alive))
    return {"event_id": clip(str(raw_event.get("id") or "")) or None, "liveness": {"at": alive.now}}


@durable_step
def liveness_step(step_ctx: StepContext) -> Alive:
    metric("LivenessChecks")
    return Alive(now=time.time())

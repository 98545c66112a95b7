"""A Capacity Block's event before its decision: when the drain starts, and which instances it is for.

    [step "block-clock" + wait "until-block-drain"]  a kind with a lead (capacity-block-delivered): a durable wait
                        until the block's end - 30 min - CAPACITY_BLOCK_LEAD_SECONDS (deadlines.drain_start), free
                        however long: a block is delivered days before it ends, and has no instances yet
    step "reservation-instances"  the instances EC2 lists in the reservation now (DescribeInstances, filter
                        capacity-reservation-id), retried by failure kind ("reservation-instances-retry-N") until the
                        decision's own deadline (deadlines.decide_deadline)

Then event_flow decides for those instances as for any event's (ownership, corroboration, 200 a step). Steps and
their results are a contract with running executions (docs/architecture.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_step
from aws_durable_execution_sdk_python.config import Duration

from drain_orchestrator import deadlines
from drain_orchestrator.decide import BotoFacts, with_reservation_instances
from drain_orchestrator.interruption import Interruption
from drain_orchestrator.observability import logger, metric
from drain_orchestrator.workflow import runtime
from drain_orchestrator.workflow.checkpoint import Checkpointed, StepFault, step_config
from drain_orchestrator.workflow.event_retry import retried
from drain_orchestrator.workflow.step_guard import faults_as

NAMED = 20  # log lines name at most this many instances


@dataclass(frozen=True)
class BlockClock(Checkpointed):
    now: float


@dataclass(frozen=True)
class ReservationInstances(Checkpointed):
    _nested: ClassVar[dict[str, Any]] = {"fault": StepFault}
    now: float
    instance_ids: list[str] = field(default_factory=list)
    fault: StepFault | None = None


def reservation_event(context: DurableContext, event: Interruption) -> tuple[Interruption, StepFault | None]:
    """The event with its reservation's instances, once its drain is due; a fault when EC2 could not be read by
    the decision's deadline (the caller fails the execution: without the instances nothing can be claimed)."""
    ws = runtime.wsettings()
    begins = deadlines.drain_start(event, ws)
    if begins is not None:
        clock: BlockClock = context.step(clock_step(), name="block-clock", config=step_config(BlockClock))
        if begins - clock.now >= 1:
            context.wait(Duration.from_seconds(int(begins - clock.now)), name="until-block-drain")
    until = deadlines.decide_deadline(event, ws)
    res = retried(context, lambda: reservation_step(event), "reservation-instances", ReservationInstances, until)
    return replace(event, instance_ids=tuple(res.instance_ids)), res.fault


@durable_step
def clock_step(step_ctx: StepContext) -> BlockClock:
    return BlockClock(now=time.time())


@durable_step
@faults_as("reservation-instances", ReservationInstances)
def reservation_step(step_ctx: StepContext, event: Interruption) -> ReservationInstances:
    found = with_reservation_instances(event, BotoFacts(runtime.ec2(), runtime.autoscaling()))
    ids = list(found.instance_ids)
    if not ids:
        metric("EventsIgnored", reason="no-instances", kind=event.kind)
    logger.info(
        "capacity reservation's instances",
        extra={"capacity_reservation_id": event.capacity_reservation_id, "instances": len(ids), "ids": ids[:NAMED]},
    )
    return ReservationInstances(now=time.time(), instance_ids=ids)

"""A step's checkpoint: the typed result every step returns, how it is stored (JSON), and its step config.

The admission path (settings, parse, decide) needs only this, not the drain's results (results.py): a cold
container whose event is skipped never loads the drain's modules. Each result is a frozen dataclass with
``to_dict``/``from_dict``; `StepSerDes` stores it as JSON. A step that failed returns its result with ``fault`` set
instead of raising, so the flow decides (retry with a durable wait, or the failure path) and the execution never
fails before its verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Self, TypeVar

from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext

from drain_orchestrator.workflow import runtime

T = TypeVar("T", bound="Checkpointed")


class Checkpointed:
    """JSON round trip of a result dataclass; ``_nested`` names the fields holding other typed values."""

    _nested: ClassVar[dict[str, Any]] = {}

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if hasattr(value, "to_dict") else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        values = dict(data)
        for name, typ in cls._nested.items():
            if values.get(name) is not None:
                values[name] = typ.from_dict(values[name])
        return cls(**values)


# a step's checkpoint this large or larger is counted (CheckpointBytes): the service refuses one over 256 KB
CHECKPOINT_METRIC_BYTES = 16 * 1024


class StepSerDes[T: "Checkpointed"](SerDes[T]):
    def __init__(self, cls: type[T]) -> None:
        self.cls = cls

    def serialize(self, value: T, serdes_context: SerDesContext) -> str:
        """The checkpoint, as JSON; one of CHECKPOINT_METRIC_BYTES or more says its size (serialized once, when the
        step ends: a replay reads it back, so it is never counted twice)."""
        data = json.dumps(value.to_dict(), separators=(",", ":"))
        if len(data.encode()) >= CHECKPOINT_METRIC_BYTES:
            from drain_orchestrator.observability import BYTES, metric  # noqa: PLC0415

            metric("CheckpointBytes", len(data.encode()), BYTES, step=type(value).__name__)
        return data

    def deserialize(self, data: str, serdes_context: SerDesContext) -> T:
        return self.cls.from_dict(json.loads(data))


@dataclass(frozen=True)
class StepFault(Checkpointed):
    """Why a step did not do its work: the failure kind (failures.FailureKind) and a short message."""

    step: str
    kind: str
    message: str


@dataclass(frozen=True)
class RunSettings(Checkpointed):
    max_concurrent_nodes: int
    dry_run: bool
    run_id: str  # unique per execution, stable across replays: who announces each phase of a node's drain


R = TypeVar("R", bound=Checkpointed)


def step_config(cls: type[Checkpointed]) -> StepConfig:
    """Steps catch their own failures (step_guard.py); the SDK retries none, the flow decides."""
    return StepConfig(retry_strategy=RetryPresets.none(), serdes=_StepEnd(cls))


class _StepEnd(StepSerDes[R]):
    """A step's checkpoint, written as the step ends, in its process: what the cluster connections noticed while it
    ran is reported then (runtime.report_cluster_notices), so the adapters keep it instead of calling back up. A
    replay reads checkpoints back (``deserialize``) and reports nothing again."""

    def serialize(self, value: R, serdes_context: SerDesContext) -> str:
        runtime.report_cluster_notices()
        return super().serialize(value, serdes_context)

"""The inputs the stack's own schedules send the function (the surge sweep's, the liveness check's), told apart before
any parse: an AWS event never loads their flows, a schedule's tick never loads the parser."""

from __future__ import annotations

from typing import Any

# what the schedules' rules send (infra/event_rules.py SWEEP_EVENT and infra/failure_alarms.py LIVENESS_EVENT build the
# same inputs; tests/infra/test_stack_rules.py checks it)
SOURCE = "drain-orchestrator"
SWEEP_DETAIL_TYPE = "Surge Sweep"
LIVENESS_DETAIL_TYPE = "Liveness Check"


def is_sweep(raw_event: Any) -> bool:
    return _detail_type(raw_event) == SWEEP_DETAIL_TYPE


def is_liveness(raw_event: Any) -> bool:
    return _detail_type(raw_event) == LIVENESS_DETAIL_TYPE


def _detail_type(raw_event: Any) -> str | None:
    if not isinstance(raw_event, dict) or raw_event.get("source") != SOURCE:
        return None
    detail_type = raw_event.get("detail-type")
    return detail_type if isinstance(detail_type, str) else None

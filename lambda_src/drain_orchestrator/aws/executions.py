"""The function's durable executions as the Lambda API lists them, and each one's history (every step, wait and
callback with its time and checkpointed result): what `drain-orchestrator history` reads."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from drain_orchestrator.aws.errors import translated

SERVICE = "lambda"


@dataclass(frozen=True)
class ExecutionSummary:
    arn: str
    name: str
    status: str  # RUNNING | SUCCEEDED | FAILED | TIMED_OUT | STOPPED | PAUSING | PAUSED
    function_arn: str  # version-qualified: the version the execution runs on
    started: float  # epoch seconds
    ended: float | None


def epoch(value: Any) -> float | None:
    """A timestamp as the API answers it (a datetime from botocore; a number or a string from other tools)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float):
        return float(value)
    text = str(value)
    try:
        return float(text)
    except ValueError:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@translated(SERVICE)
def executions_since(client: Any, function: str, since: float) -> list[ExecutionSummary]:
    """Executions of every version of ``function`` started at ``since`` or later, newest first.

    Asked newest first (ReverseOrder), the listing stops at the first page, newest first indeed, that reaches back
    before ``since``; the start times are compared here, not sent (StartedAfter): the durable local runner reads
    that filter as epoch seconds where the API sends ISO 8601, and would drop every execution."""
    found: list[ExecutionSummary] = []
    pages = client.get_paginator("list_durable_executions_by_function").paginate(
        FunctionName=function, ReverseOrder=True
    )
    for page in pages:
        listed = [_summary(e) for e in page.get("DurableExecutions", [])]
        found += [e for e in listed if e.started >= since]
        newest_first = all(a.started >= b.started for a, b in itertools.pairwise(listed))
        if listed and newest_first and listed[-1].started < since:
            break
    return sorted(found, key=lambda e: e.started, reverse=True)


@translated(SERVICE)
def history(client: Any, arn: str) -> list[dict[str, Any]]:
    """Every event of the execution's history, oldest first, with its inputs and results."""
    events: list[dict[str, Any]] = []
    pages = client.get_paginator("get_durable_execution_history").paginate(
        DurableExecutionArn=arn, IncludeExecutionData=True
    )
    for page in pages:
        events += page.get("Events", [])
    return events


def _summary(execution: dict[str, Any]) -> ExecutionSummary:
    return ExecutionSummary(
        arn=str(execution["DurableExecutionArn"]),
        name=str(execution.get("DurableExecutionName", "")),
        status=str(execution.get("Status", "")),
        function_arn=str(execution.get("FunctionArn", "")),
        started=epoch(execution.get("StartTimestamp")) or 0.0,
        ended=epoch(execution.get("EndTimestamp")),
    )

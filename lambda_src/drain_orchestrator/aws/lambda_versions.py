"""The function's published versions, its aliases and the durable executions that may still run on each version.

ListDurableExecutionsByFunction is read only where Lambda's documents agree (docs/deploy.md, "Upgrade"):
- always with a ``Qualifier``: without one, the API reference lists ``$LATEST`` only, the SDK's service model every
  version;
- never with ``Statuses``: the API reference accepts RUNNING, SUCCEEDED, FAILED, TIMED_OUT and STOPPED, the model
  PAUSING, PAUSED and DELETING too (a value the service does not know is refused). Every status but a finished one
  counts as live here, whatever its name;
- bounded by ``StartedAfter``: an execution started longer ago than its execution timeout has ended;
- each execution's version read from its listed ``FunctionArn`` when that names a version, else (an alias-qualified
  ARN: a reading the documents leave open) from GetDurableExecution's ``Version``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from drain_orchestrator.aws.errors import translated

SERVICE = "lambda"
# an execution in one of these states runs no code of its version any more; any other status may (RUNNING, PAUSING,
# PAUSED, a status added later)
FINISHED_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED", "DELETING"})
# the largest ExecutionTimeout Lambda accepts (a year): the window for a version whose own cannot be read
MAX_EXECUTION_TIMEOUT_SECONDS = 31_622_400


def lambda_client() -> Any:
    from drain_orchestrator.aws.clients import _client  # noqa: PLC0415 - one place builds clients

    return _client("lambda", None, None)


@translated(SERVICE)
def published_versions(client: Any, function: str) -> list[str]:
    """Numbered versions, oldest first ($LATEST is the function itself, never a published version)."""
    versions: list[str] = []
    for page in client.get_paginator("list_versions_by_function").paginate(FunctionName=function):
        versions += [v["Version"] for v in page["Versions"] if v["Version"].isdigit()]
    return sorted(set(versions), key=int)


@translated(SERVICE)
def alias_targets(client: Any, function: str) -> dict[str, tuple[str, ...]]:
    """Alias name -> the versions it routes to (its version, then any weighted additional versions)."""
    targets: dict[str, tuple[str, ...]] = {}
    for page in client.get_paginator("list_aliases").paginate(FunctionName=function):
        for alias in page["Aliases"]:
            weights = (alias.get("RoutingConfig") or {}).get("AdditionalVersionWeights") or {}
            targets[alias["Name"]] = (alias["FunctionVersion"], *sorted(weights))
    return targets


@translated(SERVICE)
def execution_timeout(client: Any, function: str, version: str) -> int:
    """The version's durable ExecutionTimeout in seconds (the largest Lambda allows when it does not say)."""
    config = client.get_function_configuration(FunctionName=function, Qualifier=version)
    value = (config.get("DurableConfig") or {}).get("ExecutionTimeout")
    return int(value) if isinstance(value, int) and value > 0 else MAX_EXECUTION_TIMEOUT_SECONDS


@dataclass(frozen=True)
class Listed:
    arn: str
    qualifier: str | None  # what its FunctionArn is qualified with: a version number, an alias, None
    status: str


@translated(SERVICE)
def listed_live(client: Any, function: str, qualifier: str, since: float) -> list[Listed]:
    """The executions listed under ``qualifier`` (a version or an alias) started after ``since`` (epoch seconds)
    that have not finished."""
    pages = client.get_paginator("list_durable_executions_by_function").paginate(
        FunctionName=function, Qualifier=qualifier, StartedAfter=datetime.fromtimestamp(since, UTC)
    )
    out = []
    for page in pages:
        for e in page.get("DurableExecutions", []):
            status = str(e.get("Status", ""))
            if status not in FINISHED_STATUSES:
                out.append(Listed(str(e["DurableExecutionArn"]), qualifier_of(str(e.get("FunctionArn", ""))), status))
    return out


@translated(SERVICE)
def execution_version(client: Any, arn: str) -> str | None:
    """The version the execution runs (GetDurableExecution's ``Version``), None when the answer names none."""
    version = client.get_durable_execution(DurableExecutionArn=arn).get("Version")
    return str(version) if version else None


@translated(SERVICE)
def delete_version(client: Any, function: str, version: str) -> None:
    client.delete_function(FunctionName=function, Qualifier=version)


def qualifier_of(function_arn: str) -> str | None:
    """``arn:aws:lambda:region:account:function:name:qualifier`` -> qualifier (None when unqualified)."""
    parts = function_arn.split(":")
    return parts[7] if len(parts) == 8 and parts[7] else None

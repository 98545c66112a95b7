"""The function's published versions, its aliases and the durable executions still running on each version."""

from __future__ import annotations

from typing import Any

from drain_orchestrator.aws.errors import translated

SERVICE = "lambda"
# an execution in one of these states can still run code of its version (a paused one may be resumed)
LIVE_STATUSES = ("RUNNING", "PAUSING", "PAUSED")


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
def live_executions(client: Any, function: str, version: str | None = None) -> dict[str, list[str]]:
    """Version -> ARNs of its executions that are not finished, for every version (or only ``version``).

    The version is read from each execution's version-qualified FunctionArn; the status is checked on each
    execution too, so a service that ignored the filters would still be answered right."""
    found: dict[str, list[str]] = {}
    params: dict[str, Any] = {"FunctionName": function, "Statuses": list(LIVE_STATUSES)}
    if version is not None:
        params["Qualifier"] = version
    for page in client.get_paginator("list_durable_executions_by_function").paginate(**params):
        for execution in page.get("DurableExecutions", []):
            if execution.get("Status") not in LIVE_STATUSES:
                continue
            ran_on = _version_of(str(execution.get("FunctionArn", ""))) or version or "?"
            if version is None or ran_on == version:
                found.setdefault(ran_on, []).append(str(execution["DurableExecutionArn"]))
    return found


@translated(SERVICE)
def delete_version(client: Any, function: str, version: str) -> None:
    client.delete_function(FunctionName=function, Qualifier=version)


def _version_of(function_arn: str) -> str | None:
    """``arn:aws:lambda:region:account:function:name:version`` -> version (None when unqualified)."""
    parts = function_arn.split(":")
    return parts[7] if len(parts) == 8 and parts[7] else None

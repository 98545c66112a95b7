"""ListDurableExecutionsByFunction as AWS documents it, over the durable-execution service's own listing.

The SDK team's local service ignores ``Qualifier`` (it lists every version's executions) and reads no ``Statuses``
(so any value passes): kinder than Lambda, which a command relying on either would only learn in production. The
bed's Lambda front (lambda_front.py) answers the listing with these rules instead; the service's listing is only
the raw material (every execution of the function).

What Lambda's documents say, and where they disagree (so the bed can play each; `BEHAVIOURS`):
- **API reference** (`API_ListDurableExecutionsByFunction`, boto3's documentation): without a ``Qualifier`` the
  listing covers ``$LATEST`` only; valid ``Statuses`` are RUNNING, SUCCEEDED, FAILED, TIMED_OUT, STOPPED.
- **SDK model** (botocore 1.44's service model): without a ``Qualifier`` every version; PAUSING, PAUSED and DELETING
  are valid statuses too.
- **Alias ARNs** (what neither says): an execution started through an alias is listed with the ARN it was invoked
  by (``function:NAME:ALIAS``), under ``Qualifier=ALIAS``, not under its version's number; GetDurableExecution's
  ``Version`` names the version. Otherwise as the API reference.

Common to all: ``MaxItems`` 1 to 1000, default 100 (0 or absent: the default); newest first unless ``ReverseOrder``;
``Marker`` continues a listing (``NextMarker`` only when more follow); ``StartedAfter`` / ``StartedBefore`` bound
``StartTimestamp``; a value outside its constraints answers 400 ``InvalidParameterValueException`` naming it; an
unknown function, version or alias 404 ``ResourceNotFoundException``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

REFERENCE_STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED")
MODEL_STATUSES = (*REFERENCE_STATUSES, "DELETING", "PAUSING", "PAUSED")
DEFAULT_MAX_ITEMS = 100
MAX_ITEMS = 1000
QUALIFIER = re.compile(r"\$(LATEST(\.PUBLISHED)?)|[a-zA-Z0-9-_$]+")


@dataclass(frozen=True)
class Behaviour:
    name: str
    unqualified: str  # "latest": $LATEST only; "all": every version
    statuses: tuple[str, ...]  # the valid Statuses values
    alias_arns: bool = False  # executions started through an alias are listed by the alias


API_REFERENCE = Behaviour("api-reference", "latest", REFERENCE_STATUSES)
SDK_MODEL = Behaviour("sdk-model", "all", MODEL_STATUSES)
ALIAS_ARNS = Behaviour("alias-arns", "latest", REFERENCE_STATUSES, alias_arns=True)
BEHAVIOURS = {b.name: b for b in (API_REFERENCE, SDK_MODEL, ALIAS_ARNS)}


class ListingError(Exception):
    """An error answer: HTTP status and Lambda's error type."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message


def invalid(message: str) -> ListingError:
    return ListingError(400, "InvalidParameterValueException", message)


@dataclass(frozen=True)
class Execution:
    """One execution as the service knows it, and the qualifier it was invoked through (None: its version)."""

    arn: str
    name: str
    function_arn: str  # qualified by the version it runs
    status: str
    started: float  # epoch seconds
    ended: float | None = None
    invoked_as: str | None = None  # an alias it was started through

    @property
    def version(self) -> str:
        return self.function_arn.rsplit(":", 1)[1] if self.function_arn.count(":") == 7 else "$LATEST"

    def listed_qualifier(self, behaviour: Behaviour) -> str:
        return self.invoked_as if behaviour.alias_arns and self.invoked_as else self.version

    def summary(self, behaviour: Behaviour) -> dict[str, Any]:
        base = self.function_arn.rsplit(":", 1)[0] if self.function_arn.count(":") == 7 else self.function_arn
        out: dict[str, Any] = {
            "DurableExecutionArn": self.arn,
            "DurableExecutionName": self.name,
            "FunctionArn": f"{base}:{self.listed_qualifier(behaviour)}",
            "Status": self.status,
            "StartTimestamp": self.started,
        }
        if self.ended is not None:
            out["EndTimestamp"] = self.ended
        return out


def list_page(executions: Sequence[Execution], query: Mapping[str, list[str]], behaviour: Behaviour) -> dict[str, Any]:
    """The answer to one request (its query string parsed, values as lists), or ListingError."""
    qualifier = _one(query, "Qualifier")
    if qualifier is not None and not QUALIFIER.fullmatch(qualifier):
        raise invalid(f"1 validation error detected: Value '{qualifier}' at 'qualifier' failed to satisfy constraint")
    statuses = query.get("Statuses") or []
    for status in statuses:
        if status not in behaviour.statuses:
            raise invalid(
                f"1 validation error detected: Value '{status}' at 'statuses' failed to satisfy constraint: "
                f"Member must satisfy enum value set: [{', '.join(behaviour.statuses)}]"
            )
    max_items = _int(query, "MaxItems", DEFAULT_MAX_ITEMS)
    if not 0 <= max_items <= MAX_ITEMS:
        raise invalid(f"MaxItems must be between 1 and {MAX_ITEMS}, got {max_items}")
    after, before = _time(query, "StartedAfter"), _time(query, "StartedBefore")
    marker = _int(query, "Marker", 0)
    reverse = (_one(query, "ReverseOrder") or "false").lower() == "true"
    name = _one(query, "DurableExecutionName")

    def wanted(e: Execution) -> bool:
        if qualifier is None:
            on = e.version == "$LATEST" if behaviour.unqualified == "latest" else True
        else:
            on = e.listed_qualifier(behaviour) == qualifier
        return (
            on
            and (not statuses or e.status in statuses)
            and (after is None or e.started > after)
            and (before is None or e.started < before)
            and (name is None or e.name == name)
        )

    matched = sorted((e for e in executions if wanted(e)), key=lambda e: (e.started, e.arn), reverse=not reverse)
    size = max_items or DEFAULT_MAX_ITEMS
    page = matched[marker : marker + size]
    out: dict[str, Any] = {"DurableExecutions": [e.summary(behaviour) for e in page]}
    if marker + size < len(matched):
        out["NextMarker"] = str(marker + size)
    return out


def _one(query: Mapping[str, list[str]], key: str) -> str | None:
    values = query.get(key) or []
    return values[0] if values else None


def _int(query: Mapping[str, list[str]], key: str, default: int) -> int:
    raw = _one(query, key)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise invalid(f"{key}: expected an integer, got {raw!r}") from None


def _time(query: Mapping[str, list[str]], key: str) -> float | None:
    raw = _one(query, key)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        raise invalid(f"{key}: expected a timestamp, got {raw!r}") from None

"""What a workload's JSON says, for surge before evict (pure): its selector as a list query, and why its pods
cannot be scheduled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def selector_string(selector: Mapping[str, Any]) -> str:
    """A LabelSelector (matchLabels + matchExpressions) as a list-query string."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), e.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def unschedulable_message(pods: Sequence[Mapping[str, Any]]) -> str | None:
    """The scheduler's reason when one of the workload's pods is Pending as Unschedulable (else None)."""
    for pod in pods:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        status = pod.get("status") or {}
        if status.get("phase") != "Pending":
            continue
        for c in status.get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable":
                return str(c.get("message") or "Unschedulable")
    return None

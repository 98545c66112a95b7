"""The function's Kubernetes requests, read from the bed's apiserver audit log (testbed/control_plane.py audits every
request of the function's group, written before the response)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from bench.audit_counts import verb_of

from testbed.bed import Testbed
from testbed.control_plane import AUDIT_GROUP


def audit_offset(testbed: Testbed) -> int:
    return testbed.audit_log.stat().st_size


def function_requests(testbed: Testbed, offset: int) -> list[dict[str, Any]]:
    """The audit events of the function's group written after ``offset``."""
    with testbed.audit_log.open("rb") as f:
        f.seek(offset)
        lines = f.read().decode().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    return [e for e in events if AUDIT_GROUP in e.get("user", {}).get("groups", [])]


def at(event: dict[str, Any]) -> float:
    """When the apiserver received the request (epoch seconds)."""
    return datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()


def by_verb_and_resource(events: list[dict[str, Any]]) -> Counter[str]:
    """'verb resource[/subresource]' → requests, e.g. 'list poddisruptionbudgets', 'watch pods', 'list+watch pods' (a
    watch that streamed its list first: bench/audit_counts.py verb_of)."""
    out: Counter[str] = Counter()
    for e in events:
        ref = e.get("objectRef") or {}
        resource = ref.get("resource", "?") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        out[f"{verb_of(e)} {resource}"] += 1
    return out

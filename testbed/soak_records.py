"""What the bed recorded of a soak's pods: the node each was bound to (the scheduler's Scheduled Events) and which
ones the product's identity evicted or deleted (the apiserver's audit log)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.control_plane import AUDIT_GROUP
from testbed.kube import KubeScenario

SCHEDULED = re.compile(r"Successfully assigned [^/\s]+/(?P<pod>\S+) to (?P<node>\S+)")  # the scheduler's Event


def scheduled_nodes(k8s: KubeScenario) -> dict[str, str]:
    """Pod -> node from the scheduler's own record, its Scheduled Events (kept an hour): the bindings a watch
    cut by an apiserver restart could miss."""
    nodes: dict[str, str] = {}
    token = None

    def page_after(after: str | None) -> Any:
        return k8s.core.list_namespaced_event(k8s.ns, field_selector="reason=Scheduled", limit=500, _continue=after)

    while True:
        page = retry(lambda: page_after(token))  # noqa: B023 - called at once, in this iteration
        for ev in page.items:
            m = SCHEDULED.match(ev.message or "")
            if m is not None:
                nodes[m["pod"]] = m["node"]
        token = page.metadata._continue
        if not token:
            return nodes


def audit_evictions(audit_log: Path, offset: int) -> list[str]:
    """Names of the pods the product's identity evicted or deleted (accepted requests in the audit log)."""
    with audit_log.open("rb") as f:
        f.seek(offset)
        lines = f.read().decode().splitlines()
    names = []
    for line in lines:
        e = json.loads(line) if line.strip() else {}
        ref = e.get("objectRef", {})
        ours = AUDIT_GROUP in e.get("user", {}).get("groups", [])
        accepted = e.get("responseStatus", {}).get("code", 500) < 300
        evicted = ref.get("subresource") == "eviction" and e.get("verb") == "create"
        deleted = ref.get("resource") == "pods" and not ref.get("subresource") and e.get("verb") == "delete"
        if ours and accepted and (evicted or deleted):
            names.append(ref.get("name", ""))
    return names


def retry(fn: Callable[[], Any], attempts: int = 20) -> Any:
    """The bed's API through its own faults: tried once a second until it answers."""
    for i in range(attempts):
        try:
            return fn()
        except Exception:
            if i == attempts - 1:
                raise
            time.sleep(1)
    return None

"""Retry a PDB-blocked eviction as soon as its budget can allow it, instead of sleeping a fixed 5 s.

The disruption controller raises ``status.disruptionsAllowed`` when a replacement pod becomes Ready; a
watch on PodDisruptionBudgets wakes the drain at that moment. One LIST + one WATCH per wait keeps the
request count flat however long the wait is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

from drain_orchestrator.kube.rest import Kube


def _path(namespaces: set[str]) -> str:
    if len(namespaces) == 1:
        return f"/apis/policy/v1/namespaces/{next(iter(namespaces))}/poddisruptionbudgets"
    return "/apis/policy/v1/poddisruptionbudgets"


def _allowed(pdb: dict[str, Any]) -> int:
    return int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)


def _allows(pdb: dict[str, Any]) -> bool:
    return _allowed(pdb) > 0


def list_allowing(kube: Kube, namespaces: set[str]) -> dict[tuple[str, str], int]:
    """(namespace, name) → ``disruptionsAllowed`` of the PDBs in ``namespaces`` that currently allow one."""
    out: dict[tuple[str, str], int] = {}
    for ns in sorted(namespaces):
        resp = kube.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets")
        for pdb in resp.body.get("items") or [] if resp.ok else []:
            if _allows(pdb):
                out[(ns, (pdb.get("metadata") or {}).get("name", ""))] = _allowed(pdb)
    return out


def wait_for_budget(kube: Kube, pdbs: Iterable[tuple[str, str]], timeout: float) -> bool:
    """Block until one of ``pdbs`` allows a disruption (or disappears), or ``timeout`` seconds pass.

    Returns True when woken by a budget, False on timeout or when the watch cannot be used.
    """
    keys = set(pdbs)
    if not keys or timeout <= 0:
        return False
    end = time.monotonic() + timeout
    namespaces = {ns for ns, _ in keys}
    path = _path(namespaces)
    listed = kube.request("GET", path)
    if not listed.ok:
        return False
    present = set()
    for pdb in listed.body.get("items") or []:
        meta = pdb.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if key in keys:
            present.add(key)
            if _allows(pdb):
                return True
    if keys - present:
        return True  # a budget was deleted: the next eviction may go through
    rv = (listed.body.get("metadata") or {}).get("resourceVersion")
    left = end - time.monotonic()
    if left <= 0:
        return False
    query = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": max(1, math.ceil(left))}
    try:
        for event in kube.stream_lines(path, query, timeout=left + 5):
            obj = event.get("object") or {}
            meta = obj.get("metadata") or {}
            key = (meta.get("namespace", ""), meta.get("name", ""))
            if key in keys and (event.get("type") == "DELETED" or _allows(obj)):
                return True
            if time.monotonic() >= end:
                return False
    except Exception:  # a broken watch only means we fall back to the backoff timer
        remaining = end - time.monotonic()
        if remaining > 0:
            time.sleep(min(remaining, 1.0))
        return False
    return False

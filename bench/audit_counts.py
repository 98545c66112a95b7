"""API requests counted from the bed's audit log, by verb and resource (not the tools' own counters).

The bed audits, at Metadata level, every request of the drain-orchestrator group and of the
aws-node-termination-handler ServiceAccount (testbed/control_plane.py AUDIT_POLICY); one event per request at
ResponseComplete. An eviction is counted with its answer (201 evicted, 429 refused)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

ORCHESTRATOR = "group:drain-orchestrator"
NTH = "user:system:serviceaccount:kube-system:aws-node-termination-handler"


def _epoch(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def _who(event: dict[str, Any]) -> set[str]:
    user = event.get("user") or {}
    return {f"user:{user.get('username', '')}", *(f"group:{g}" for g in user.get("groups") or [])}


def verb_of(event: dict[str, Any]) -> str:
    """The request's verb; a watch that streams its list first (``sendInitialEvents=true``) is ``list+watch``: one
    request where a LIST and a watch were two."""
    verb = str(event.get("verb", "?"))
    streamed = "sendInitialEvents=true" in str(event.get("requestURI", ""))
    return "list+watch" if verb == "watch" and streamed else verb


def kind_of(event: dict[str, Any]) -> str:
    """``verb resource[/subresource]``, an eviction with its HTTP code: ``create pods/eviction 429``."""
    ref = event.get("objectRef") or {}
    resource = str(ref.get("resource", "?")) + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    out = f"{verb_of(event)} {resource}"
    if ref.get("subresource") == "eviction":
        out += f" {(event.get('responseStatus') or {}).get('code', '?')}"
    return out


def _events(
    lines: Iterable[bytes | str], who: str, since: float, until: float
) -> Iterator[tuple[float, dict[str, Any]]]:
    """(received, event) of each request of ``who`` (ORCHESTRATOR, NTH) received in [since, until] (epochs)."""
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line being written as we read
        if event.get("stage") != "ResponseComplete" or who not in _who(event):
            continue
        at = _epoch(str(event.get("requestReceivedTimestamp", "1970-01-01T00:00:00Z")))
        if since <= at <= until:
            yield at, event


def requests(lines: Iterable[bytes | str], who: str, since: float, until: float) -> Iterator[tuple[float, str]]:
    """(received, kind) of each request of ``who`` (ORCHESTRATOR, NTH) received in [since, until] (epochs)."""
    for at, event in _events(lines, who, since, until):
        yield at, kind_of(event)


def evictions(path: Path, who: str, since: float, until: float) -> list[tuple[float, str, int]]:
    """(received, pod, HTTP code) of each eviction of ``who`` over the log and its rotated parts, by time received."""
    out: list[tuple[float, str, int]] = []
    for part in _parts(path, since):
        with part.open("rb") as f:
            for at, event in _events(f, who, since, until):
                ref = event.get("objectRef") or {}
                if ref.get("subresource") == "eviction":
                    out.append((at, str(ref.get("name", "")), int((event.get("responseStatus") or {}).get("code", 0))))
    return sorted(out)


def tally(lines: Iterable[bytes | str], who: str, since: float, until: float) -> Counter[str]:
    """Requests of ``who`` (ORCHESTRATOR, NTH) received in [since, until], by kind."""
    return Counter(kind for _, kind in requests(lines, who, since, until))


def _parts(path: Path, since: float) -> list[Path]:
    """The log and the files the apiserver rotated it into since ``since`` (``audit-<time>.jsonl`` beside it)."""
    rotated = sorted(p for p in path.parent.glob(f"{path.stem}-*{path.suffix}") if p.stat().st_mtime >= since)
    return [*rotated, path]


def read(path: Path, who: str, since: float, until: float) -> dict[str, int]:
    """``timeline`` by kind: a window that spans a rotation is counted whole."""
    return dict(Counter(kind for _, kind in timeline(path, who, since, until)).most_common())


def timeline(path: Path, who: str, since: float, until: float) -> list[tuple[float, str]]:
    """``requests`` over the log and its rotated parts, by time received."""
    out: list[tuple[float, str]] = []
    for part in _parts(path, since):
        with part.open("rb") as f:
            out.extend(requests(f, who, since, until))
    return sorted(out)


def render(counts: dict[str, int], pods: int) -> str:
    total = sum(counts.values())
    rows = [f"| {k} | {n} | {n / max(1, pods):.2f} |" for k, n in counts.items()]
    return "\n".join(
        ["| request | count | per pod |", "|---|---|---|", *rows, f"| **all** | {total} | {total / max(1, pods):.2f} |"]
    )

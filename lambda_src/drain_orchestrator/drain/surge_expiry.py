"""Surges left behind (pure): which entries of a workload's ``surge-holders`` no drain will take back any more.

A drain takes back what it surged at its verdict (retried for SURGE_RESTORE_RETRY_SECONDS). An execution lost
before that (failed for good, stopped, its version deleted) leaves its entry in place. Each entry carries an
expiry, the drain's deadline plus EXPIRY_MARGIN_SECONDS (past every verdict's retries), and an entry is left
behind once

- its expiry has passed: no drain for that node is still running under the deadline it surged for; or
- its node is gone: the pod it made room for went with the node, so nothing needs the extra replica (a drain still
  running for it ends ``node-gone`` and finds nothing left to restore); a Node of another UID under the name is
  not its node (node_identity.py).

An entry without an expiry (written by an older version) is left behind only when its node is gone.
"""

from __future__ import annotations

import zlib
from collections.abc import Container, Mapping
from dataclasses import dataclass
from datetime import datetime

from drain_orchestrator.drain.surge import Holder
from drain_orchestrator.timefmt import iso_utc

# the verdict's restore retries (10 min) plus the time to complete the lifecycle action and report
EXPIRY_MARGIN_SECONDS = 900


def expiry_of(deadline: float | None) -> str | None:
    """The ``expires`` of a surge made by a drain with this deadline (None: a drain without one, e.g. the CLI's)."""
    return None if deadline is None else iso_utc(int(deadline) + EXPIRY_MARGIN_SECONDS)


def _epoch(value: str) -> float | None:
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class LeftBehind:
    node: str
    why: str  # "expired at <ISO>" or "node gone"


def left_behind(
    holders: Mapping[str, Holder], now: float, nodes: Container[str], uids: Mapping[str, str] | None = None
) -> list[LeftBehind]:
    """The entries of ``holders`` no drain will take back: expired, or of a node not in ``nodes``, or of another
    Node object than the one now under the name (``uids``: node name -> its UID, where known)."""
    out = []
    for node, h in sorted(holders.items()):
        at = _epoch(h.expires) if h.expires else None
        if node not in nodes:
            out.append(LeftBehind(node, "node gone"))
        elif not h.of((uids or {}).get(node)):
            out.append(LeftBehind(node, "node replaced"))
        elif at is not None and at <= now:
            out.append(LeftBehind(node, f"expired at {h.expires}"))
    return out


def sweeps_at_verdict(node: str, draining_seen: int | None, *, scheduled: bool = False) -> bool:
    """Whether a drain's verdict also looks for surges left behind (two cluster-wide LISTs, each finding what every
    other drain's would): never when a schedule looks (SURGE_SWEEP_MINUTES); otherwise always for a drain that
    found itself alone or did not count, and in a storm of n drains, the drains whose node name hashes to 0 modulo
    n — about one a storm, not n."""
    if scheduled:
        return False
    if draining_seen is None or draining_seen < 2:
        return True
    return zlib.crc32(node.encode()) % draining_seen == 0

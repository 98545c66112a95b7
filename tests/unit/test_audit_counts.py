"""The benchmarks' request counts from the audit log (bench/audit_counts.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from bench.audit_counts import NTH, ORCHESTRATOR, read, render, tally


def _event(
    verb: str,
    resource: str,
    *,
    sub: str | None = None,
    code: int = 200,
    at: str = "2026-12-01T10:00:01Z",
    user: str = "arn:aws:sts::1:assumed-role/x",
    groups: tuple[str, ...] = ("drain-orchestrator",),
    stage: str = "ResponseComplete",
) -> str:
    ref = {"resource": resource, **({"subresource": sub} if sub else {})}
    return json.dumps(
        {
            "stage": stage,
            "verb": verb,
            "objectRef": ref,
            "responseStatus": {"code": code},
            "requestReceivedTimestamp": at,
            "user": {"username": user, "groups": list(groups)},
        }
    )


def test_counts_each_tools_requests_by_kind_in_the_window_with_eviction_answers() -> None:
    sa = "system:serviceaccount:kube-system:aws-node-termination-handler"
    lines = [
        _event("create", "pods", sub="eviction", code=201),
        _event("create", "pods", sub="eviction", code=429),
        _event("create", "pods", sub="eviction", code=429),
        _event("list", "pods"),
        _event("list", "pods", stage="ResponseStarted"),  # a watch's first stage: not a second request
        _event("get", "nodes", at="2026-12-01T10:05:00Z"),  # after the window
        _event("get", "nodes", user=sa, groups=("system:serviceaccounts",)),
        "{half a line",
    ]
    since, until = 1796119200.0, 1796119260.0  # 10:00:00 .. 10:01:00 UTC
    ours = tally(lines, ORCHESTRATOR, since, until)
    assert ours == {"create pods/eviction 201": 1, "create pods/eviction 429": 2, "list pods": 1}
    assert tally(lines, NTH, since, until) == {"get nodes": 1}
    assert "| **all** | 4 | 2.00 |" in render(dict(ours), 2)


def test_a_window_across_a_rotation_is_counted_from_both_files(tmp_path: Path) -> None:
    since, until = 1796119200.0, 1796119260.0
    log = tmp_path / "audit.jsonl"
    rotated = tmp_path / "audit-2026-12-01T10-00-30.000.jsonl"  # the apiserver's name for the rotated part
    older = tmp_path / "audit-2026-11-30T09-00-00.000.jsonl"  # rotated before the window: not read
    rotated.write_text(_event("list", "pods") + "\n" + _event("create", "pods", sub="eviction", code=201) + "\n")
    older.write_text(_event("list", "pods") + "\n")
    os.utime(older, (since - 3600, since - 3600))
    log.write_text(_event("create", "pods", sub="eviction", code=201, at="2026-12-01T10:00:40Z") + "\n")
    assert read(log, ORCHESTRATOR, since, until) == {"create pods/eviction 201": 2, "list pods": 1}

"""The side-by-side benchmark's pure parts (bench/nth.py, bench/bench_nth.py): how it refuses to run without the
NTH binary, the per-event ids NTH needs, and the tables. Running NTH itself is `make bench-nth`, outside `make test`
(its build takes ~9 min cold)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import bench_nth, nth


def test_missing_binary_names_the_path_and_the_make_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRAIN_TESTBED_CACHE", str(tmp_path))
    with pytest.raises(nth.NthMissing) as err:
        nth.binary()
    msg = str(err.value)
    assert str(tmp_path / "nth-v1.25.1" / "bin" / "node-termination-handler") in msg
    assert "make build-nth" in msg


def test_present_binary_is_found_in_the_cache_build_nth_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRAIN_TESTBED_CACHE", str(tmp_path))
    exe = tmp_path / "nth-v1.25.1" / "bin" / "node-termination-handler"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert nth.binary() == exe


def test_bench_exits_2_with_the_reason_before_starting_a_bed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DRAIN_TESTBED_CACHE", str(tmp_path))
    monkeypatch.setattr("sys.argv", ["bench_nth", "--nodes", "1"])
    monkeypatch.setattr(bench_nth.Testbed, "start", lambda *a, **k: pytest.fail("a bed was started"))
    assert bench_nth.main() == 2
    err = capsys.readouterr().err
    assert err.startswith("error: aws-node-termination-handler v1.25.1 is not built") and "Traceback" not in err


def test_every_event_gets_its_own_id_and_the_original_is_kept() -> None:
    ev = {"id": "same", "detail": {"EC2InstanceId": "i-1"}}
    a, b = nth.unique_id(ev), nth.unique_id(ev)
    assert a["id"] != b["id"] and "same" not in (a["id"], b["id"])
    assert a["detail"] == ev["detail"] and ev["id"] == "same"


def _phase(statuses: dict[str, int], kube: float) -> dict[str, object]:
    return {
        "nodes": 2, "pods": 6, "all_done_s": 3.0, "cordon_s": [0.1, 0.2], "drained_s": [1.0, 2.0],
        "hook_s": [1.5, 3.0], "statuses": statuses, "kube_requests": kube, "apf_rejected": 0.0,
        "eviction_429": 1.0, "all_429": 1.0, "aws_calls": {"ec2:DescribeInstances": 2}, "operations": [], "errors": [],
    }  # fmt: skip


def test_render_puts_both_tools_and_the_stray_events_side_by_side() -> None:
    res = {
        "setup_s": 5.0, "nth_start_s": 0.2, "warm_up_s": 1.0, "max_unavailable": "50%",
        "orchestrator": _phase({"SUCCEEDED": 2}, 30), "nth": _phase({"HOOK-COMPLETED": 2}, 12),
        "nth_dispatched": {"kube-system-service-accounts": 12.0},
        "stray": [{"tool": "NTH (defaults)", "case": "other cluster", "outcome": "process running",
                   "hook": "ACTIVE (left alone)", "log": ["error node not found (x4)"]}],
        "nth_windows": [{"flags": [], "alive": True, "exit_code": None, "receives": 5, "deletes": 1, "completes": 0,
                         "queue_left": {"visible": 0, "in_flight": 1}}],
    }  # fmt: skip
    out = bench_nth.render(res)
    assert "| API requests per pod | 5.00 | 2.00 |" in out
    row = "| other cluster | NTH (defaults) | process running | ACTIVE (left alone) | error node not found (x4) |"
    assert row in out
    assert "NTH (defaults), 75 s: still running; ReceiveMessage 5, DeleteMessage 1" in out

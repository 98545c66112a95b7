"""The side-by-side benchmark's pure parts (bench/nth.py, bench/bench_nth.py, bench/nth_report.py): how it refuses
to run without the NTH binary, the per-event ids NTH needs, the rounds' order, and the tables over the rounds.
Running NTH itself is `make bench-nth`, outside `make test` (its build takes ~9 min cold)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from bench import bench_nth, cpu, nth, nth_report


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


def _phase(all_done: float | None, requests: dict[str, int], *, hooks: bool = True) -> dict[str, object]:
    return {
        "nodes": 2, "pods": 10, "all_done_s": all_done, "cordon_s": [0.1, 0.3], "drained_s": [1.0, 2.0],
        "hook_s": [1.5, 3.0] if hooks else [], "statuses": {"SUCCEEDED": 2}, "kube_requests": 0.0,
        "apf_rejected": 0.0, "eviction_429": 0.0, "all_429": 0.0,
        "aws_calls": {"ec2:DescribeInstances": 2} if hooks else {}, "operations": [], "errors": [],
        "requests": requests,
    }  # fmt: skip


def _round(r: int, orch: float | None, nth_s: float, ideal: float, orch_429: int) -> dict[str, object]:
    return {
        "round": r, "order": list(bench_nth.round_order(r)), "setup_s": 20.0,
        "orchestrator": _phase(orch, {"create pods/eviction 201": 10, "create pods/eviction 429": orch_429}),
        "nth": _phase(nth_s, {"create pods/eviction 201": 10, "get pods": 20}),
        "ideal": _phase(ideal, {"create pods/eviction 201": 10, "patch nodes": 2}, hooks=False),
        "nth_evictions_logged": 12, "nth_client_throttled_s": [1.5],
    }  # fmt: skip


def _results(rounds: list[dict[str, object]]) -> dict[str, object]:
    return {
        "nth_start_s": 0.2, "warm_up_s": 1.0, "max_unavailable": "50%", "grace": 30, "nth_flags": [],
        "rounds": rounds,
        "stray": [{"tool": "NTH (defaults)", "case": "other cluster", "outcome": "process running",
                   "hook": "ACTIVE (left alone)", "log": ["error node not found (x4)"]}],
        "nth_windows": [{"flags": [], "alive": True, "exit_code": None, "receives": 5, "deletes": 1, "completes": 0,
                         "queue_left": {"visible": 0, "in_flight": 1}}],
    }  # fmt: skip


def test_rounds_alternate_which_tool_goes_first_and_the_lower_bound_goes_last() -> None:
    assert [bench_nth.round_order(r) for r in (1, 2, 3)] == [
        ("orchestrator", "nth", "ideal"),
        ("nth", "orchestrator", "ideal"),
        ("orchestrator", "nth", "ideal"),
    ]


def test_median_and_range_over_rounds() -> None:
    assert nth_report.median_range([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    assert nth_report.median_range([4.0, 1.0]) == (2.5, 1.0, 4.0)
    assert nth_report.median_range([]) is None
    assert nth_report.cell([40.0, None, 50.0], "{:.1f}", " s") == "45.0 s (40.0-50.0), 1 of 3 rounds not all done"
    assert nth_report.cell([7.0], "{:.1f}", " s") == "7.0 s"
    assert nth_report.cell([None]) == "n/a"


def test_ratio_of_medians_says_when_the_divisor_is_zero() -> None:
    assert nth_report.ratio(3.0, 1.5) == "2.00"
    assert nth_report.ratio(2.0, 0.0) == "∞ (divisor 0)"
    assert nth_report.ratio(0.0, 0.0) == "both 0"
    assert nth_report.ratio(None, 1.0) == "n/a"


def test_render_gives_medians_ranges_ratios_and_each_tool_over_the_lower_bound() -> None:
    res = _results([_round(1, 40.0, 80.0, 20.0, 5), _round(2, 60.0, 100.0, 25.0, 15), _round(3, 50.0, 90.0, 20.0, 10)])
    out = nth_report.render(res)
    assert "| median (min-max) over 3 rounds | orchestrator | aws-node-termination-handler | lower bound |" in out
    row = "| all drained + hooks completed (lower bound: all drained) | 50.0 s (40.0-60.0) | 90.0 s (80.0-100.0) | "
    assert row + "20.0 s (20.0-25.0) |" in out
    assert "| eviction 429s (PDB refusals) per pod | 1.00 (0.50-1.50) | 0.00 (0.00-0.00) | 0.00 (0.00-0.00) |" in out
    assert "| API requests per pod: orchestrator ÷ NTH (medians) | 0.67 |" in out
    assert "| all drained + hooks completed: orchestrator ÷ NTH (medians) | 0.56 |" in out
    assert "| PDB refusals (eviction 429s) per pod: orchestrator ÷ NTH (medians) | ∞ (divisor 0) |" in out
    # per round 2.0, 2.4, 2.5 and 4.0, 4.0, 4.5
    assert "| storm time ÷ lower bound, orchestrator (per round) | 2.40 (2.00-2.50) |" in out
    assert "| storm time ÷ lower bound, aws-node-termination-handler (per round) | 4.00 (4.00-4.50) |" in out
    assert "| event → hook completed, p50 | 2.2 s (2.2-2.2) | 2.2 s (2.2-2.2) | — |" in out
    assert "- round 2 (in this order): aws-node-termination-handler 100.0 s, orchestrator 60.0 s, lower bound" in out
    assert "terminationGracePeriodSeconds 30" in out
    row = "| other cluster | NTH (defaults) | process running | ACTIVE (left alone) | error node not found (x4) |"
    assert row in out
    assert "NTH (defaults), 75 s: still running; ReceiveMessage 5, DeleteMessage 1" in out


def test_a_round_not_all_done_is_left_out_of_the_median_and_named() -> None:
    res = _results([_round(1, None, 80.0, 20.0, 0), _round(2, 60.0, 100.0, 20.0, 0)])
    out = nth_report.render(res)
    assert "| 60.0 s, 1 of 2 rounds not all done |" in out
    assert "| storm time ÷ lower bound, orchestrator (per round) | 3.00, 1 of 2 rounds not all done |" in out
    summary = nth_report.summary(res)
    assert summary["storm time ÷ lower bound"]["nth"] == {"median": 4.5, "min": 4.0, "max": 5.0}
    assert summary["event → hook completed, p50"]["ideal"] is None


def test_requests_over_all_rounds_are_summed_by_kind() -> None:
    res = _results([_round(1, 40.0, 80.0, 20.0, 5), _round(2, 60.0, 100.0, 25.0, 15)])
    counts, pods = nth_report.requests_all_rounds(res, "orchestrator")
    assert counts == {"create pods/eviction 429": 20, "create pods/eviction 201": 20} and pods == 20


def test_cpu_spent_between_snapshots_is_counted_by_process_and_for_this_one() -> None:
    before = cpu.snapshot([("self", os.getpid()), ("gone", 2**22 + 1)])
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:  # burn 0.2 CPU seconds
        pass
    used = cpu.spent(before, cpu.snapshot([("self", os.getpid())]))
    assert "gone" not in used  # no such process: left out, not counted as 0
    assert used[cpu.HARNESS] >= 0.2 and used["self"] >= 0.15  # /proc counts in clock ticks (10 ms)


def test_control_plane_and_own_cpu_add_up_the_right_processes() -> None:
    used = {"kube-apiserver": 9.0, "etcd": 2.0, "kube-controller-manager": 2.0, "kube-scheduler": 1.0, "kwok": 1.0}
    used |= {"awsemu": 0.5, cpu.HARNESS: 4.0}
    assert cpu.control_plane(used) == 15.0  # the AWS emulator stands for AWS: not the control plane
    assert cpu.own(used) == 4.0
    assert cpu.own({**used, cpu.TOOL: 3.0}) == 7.0  # a tool in its own process adds its CPU to the harness's
    assert cpu.control_plane({}) is None and cpu.own({}) is None


def test_render_gives_each_contenders_cpu_and_leaves_it_out_when_not_measured() -> None:
    rounds = [_round(1, 40.0, 80.0, 20.0, 5)]
    out = nth_report.render(_results(rounds))
    assert "| control-plane CPU during the storm (apiserver, etcd, controllers, kwok) | n/a | n/a | n/a |" in out
    rounds[0]["orchestrator"]["cpu"] = {"kube-apiserver": 9.0, "etcd": 2.0, cpu.HARNESS: 4.0}  # type: ignore[index]
    rounds[0]["nth"]["cpu"] = {"kube-apiserver": 5.0, cpu.HARNESS: 0.5, cpu.TOOL: 2.0}  # type: ignore[index]
    out = nth_report.render(_results(rounds))
    assert "| control-plane CPU during the storm (apiserver, etcd, controllers, kwok) | 11.0 s | 5.0 s | n/a |" in out
    assert (
        "| own CPU during the storm (harness process with the observer; NTH: + its process) | 4.0 s | 2.5 s | n/a |"
        in out
    )

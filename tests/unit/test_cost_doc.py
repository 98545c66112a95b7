"""The cost figures have one source, bench/costs.py (prices, measured inputs, estimates), with the held drain's model
(bench/held_cost.py, the workflow's pacing functions): docs/cost.md's tables are its rendering, and every figure the
README, docs/cost.md and docs/deploy.md quote elsewhere is checked against it, so a re-measured input or a changed
pacing rule cannot leave a doc behind."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from bench import costs
from bench.cost_doc import BEGIN, END, hold, render

from drain_orchestrator import pacing
from drain_orchestrator.workflow_settings import WorkflowSettings

ROOT = Path(__file__).resolve().parents[2]


def _read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def _flat(name: str) -> str:
    """The file with every run of whitespace as one space: a figure checked here may move across line breaks."""
    return " ".join(_read(name).split())


def _quoted(pattern: str, name: str) -> str:
    found = re.search(pattern, _flat(name))
    assert found, f"{name}: no match for {pattern!r} (reworded? keep the figure checked here)"
    return found.group(1)


def test_cost_md_shows_the_tables_the_model_renders() -> None:
    text = _read("docs/cost.md")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] == render(), "docs/cost.md is stale: paste `python -m bench.cost_doc` over its block"


def test_the_rendered_tables_carry_the_measured_inputs() -> None:
    out = render()
    assert f"| durable operations | {costs.TYPICAL_OPERATIONS.value:g} |" in out
    assert f"{hold().now.requests:,} ({hold().per_minute(hold().now):.2f} a minute)" in out
    assert f"{costs.ALARMS_FIXED} + {costs.ALARMS_PER_CLUSTER} per cluster" in out


def test_a_thousand_drains_cost_what_cost_md_says() -> None:
    low, high = (round(1000 * costs.typical_drain(s).total() * 100) for s in (0, 30))
    quoted = _quoted(r"a thousand drains done in one pass cost about (\d+\u2013\d+) cents", "docs/cost.md")
    assert quoted == f"{low}\N{EN DASH}{high}"


def test_the_held_drain_quoted_in_the_readme_and_deploy_md_is_the_model_s() -> None:
    h = hold()
    per_minute = f"{h.per_minute(h.now):.2f}"
    operations = round(h.operations(h.now), -2)
    assert _quoted(r"makes ([\d.]+) Kubernetes requests a minute", "README.md") == per_minute
    assert int(_quoted(r"about ([\d,]+) durable operations", "README.md").replace(",", "")) == operations
    assert _quoted(r"billed ([\d.]+) s of compute", "README.md") == f"{h.now.compute_seconds:.0f}"
    assert int(_quoted(r"held by a PDB for 48 h about ([\d,]+)", "docs/deploy.md").replace(",", "")) == operations
    one_pass = _quoted(r"a drain done in one pass is (\d+) operations", "docs/deploy.md")
    assert int(one_pass) == costs.TYPICAL_OPERATIONS.value


def test_the_limits_cost_md_quotes_are_the_pacing_bound() -> None:
    text = _flat("docs/cost.md")
    defaults = pacing.worst_case_any_hook(WorkflowSettings())
    short = pacing.worst_case_any_hook(dataclasses.replace(WorkflowSettings(), drain_pass_seconds=30))
    assert f"With the defaults it is {defaults.operations:,} operations" in text
    assert f"a hook with a {defaults.heartbeat_timeout:,} s heartbeat timeout" in text
    assert f"`DRAIN_PASS_SECONDS=30` gives {short.operations:,}" in text
    assert f"**{pacing.MAX_DURABLE_OPERATIONS:,} durable operations**" in text
    assert f"**{pacing.MAX_CHECKPOINT_BYTES // 2**20} MB of checkpoint" in text


def _worst_by_path(ws: WorkflowSettings) -> dict[str, tuple[int, int | None]]:
    """Each fault path's worst case over every hook, with the steps outside the loops: (operations, hook)."""
    out: dict[str, tuple[int, int | None]] = {}
    for hook in (None, *pacing.HEARTBEAT_TIMEOUTS):
        horizon = pacing.worst_case(ws, hook).horizon
        interval = None if hook is None else pacing.heartbeat_interval(hook)
        for path, ops in pacing.fault_paths(ws, float(horizon), interval, hook).items():
            total = pacing.FIXED_OPERATIONS + ops + 3 * pacing.GATE_FAST_CHECKS
            if total > out.get(path, (0, None))[0]:
                out[path] = (total, hook)
    return out


def test_the_fault_paths_cost_md_quotes_are_the_model_s() -> None:
    text = _flat("docs/cost.md")
    plain, asking = _worst_by_path(WorkflowSettings()), _worst_by_path(WorkflowSettings(held_approval=True))
    (outage, hook), (with_approval, _) = plain["outage"], asking["outage"]
    assert f"| {outage:,} (hook {hook} s; {with_approval:,} with `HELD_APPROVAL=on`) |" in text
    beats, hook = plain["failing heartbeats"]
    assert f"| {beats:,} (hook {hook:,} s, passes running their budget) |" in text
    looks, hook = asking["open approval"]
    assert f"| {looks:,} (hook {hook:,} s, passes running their budget) |" in text
    assert f"at most {pacing.FAULT_LOOP_OPERATIONS:,} operations (`FAULT_LOOP_OPERATIONS`)" in text
    assert "retries of failing steps beyond their first backoffs" not in text


def test_the_thousand_node_storm_in_cost_md_is_the_fleet_result_in_benchmarks_md() -> None:
    fleet = _read("docs/benchmarks.md").split("## Fleet:", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) s \| \d+ s \|.*\| ([\d.]+) \(operations ([\d.]+)\) \|$", fleet, flags=re.MULTILINE)
    assert len(rows) == 2, fleet
    (fast, fast_cost, ops_cost), (slow, slow_cost, _) = rows
    storm = f"**${fast_cost} for the storm when a wave takes {fast} s, ${slow_cost} when it takes {slow} s**"
    assert storm in _flat("docs/cost.md")
    assert _quoted(r"— \$([\d.]+) of it durable operations", "docs/cost.md") == ops_cost


def test_benchmarks_md_reports_the_inputs_and_the_hold_the_model_uses() -> None:
    text = _flat("docs/benchmarks.md")
    h = hold()
    pct = 100 * h.now.compute_seconds / h.seconds
    assert (
        f"The 48 h model: **{h.now.requests:,} Kubernetes requests ({h.per_minute(h.now):.2f} a minute), "
        f"{h.now.compute_seconds:.0f} s of billed steps ({pct:.2g} % of the hold), {h.operations(h.now):,} durable "
        "operations**"
    ) in text
    first, later = costs.FIRST_PASS, costs.HELD_PASS
    assert f"the first {first.requests:g} requests and {first.seconds:g} s" in text
    assert f"each later one {later.requests:g} requests and {later.seconds:g} s" in text
    fixed = costs.SOLO_FIXED_REQUESTS.value
    assert f"**{10 + fixed:g} = 10 evictions + {fixed:g}**" in text
    assert f"| durable operations per execution | {costs.TYPICAL_OPERATIONS.value:g} (" in text
    assert f"{costs.LOG_BYTES_PER_DRAIN.value:,g} bytes per drained node" in text

"""The tables of docs/cost.md, rendered from bench/costs.py (prices, measured inputs, estimates) and the held drain's
model (bench/held_cost.py, the workflow's own pacing functions). Pure.

    python -m bench.cost_doc       # paste between docs/cost.md's `<!-- generated: cost tables -->` markers

`tests/unit/test_cost_doc.py` fails when docs/cost.md's block differs from this output, or when the README or
docs/deploy.md quote a figure of the held drain that the model does not give.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass

from bench import costs
from bench.held_cost import Cost, held_model, polling_model
from drain_orchestrator.workflow_settings import WorkflowSettings

HOLD_HOURS = 48
HOLD_HEARTBEAT_TIMEOUT = 3600  # AWS's default for a lifecycle hook
BEGIN = "<!-- generated: cost tables (python -m bench.cost_doc) -->"
END = "<!-- end generated: cost tables -->"


@dataclass(frozen=True)
class Hold:
    """A drain held ``HOLD_HOURS`` by a PDB that never allows, now and with the loop that polled every pass."""

    now: Cost
    before: Cost

    @property
    def seconds(self) -> float:
        return HOLD_HOURS * 3600.0

    def operations(self, loop: Cost) -> int:
        return loop.loop_operations + int(costs.HOLD_OUTSIDE_LOOP_OPERATIONS.value)

    def per_minute(self, loop: Cost) -> float:
        return loop.requests / (self.seconds / 60)

    def drain(self) -> costs.DrainCost:
        """What the held drain is billed: its steps, the replay of every resumed invocation, a log line a pass."""
        invocations = self.now.waits + 1
        return costs.DrainCost(
            self.operations(self.now),
            self.now.compute_seconds + invocations * costs.REPLAY_SECONDS,
            invocations,
            costs.LOG_BYTES_PER_DRAIN.value + (self.now.passes - 1) * costs.LOG_BYTES_PER_LATER_PASS,
        )


def hold() -> Hold:
    ws = WorkflowSettings()
    now = held_model(HOLD_HOURS * 3600.0, ws, HOLD_HEARTBEAT_TIMEOUT, costs.FIRST_PASS, costs.HELD_PASS)
    return Hold(now, polling_model(HOLD_HOURS * 3600.0, ws, HOLD_HEARTBEAT_TIMEOUT))


def money(value: float) -> str:
    """Dollars to two significant digits, without an exponent: 0.58, 0.00013, 0.00000020."""
    if value <= 0:
        return "0"
    return f"{value:.{max(0, 1 - math.floor(math.log10(value)))}f}"


def size(num_bytes: float) -> str:
    return f"{num_bytes / 1e6:.1f} MB" if num_bytes >= 1e5 else f"{num_bytes / 1000:.1f} KB"


def percent(value: float) -> str:
    return f"{value:.1f} %" if value >= 1 else f"{value:.2g} %"


def _prices() -> list[str]:
    rows = [
        ("durable operations (start, step, wait, …)", f"${costs.PRICE_OPERATION * 1e6:.2f} per million", "`P_op`"),
        ("durable data written", f"${costs.PRICE_WRITTEN_GB:.2f} per GB", "`P_w`"),
        ("durable data retained", f"${costs.PRICE_RETAINED_GB_MONTH:.2f} per GB-month", "— (14 days: negligible)"),
        (
            "Lambda compute, arm64 (the function's architecture)",
            f"${costs.PRICE_GB_SECOND:.10f} per GB-second",
            "`P_gbs`",
        ),
        (
            "Lambda requests (each invocation of an execution)",
            f"${costs.PRICE_REQUEST * 1e6:.2f} per million",
            "`P_req`",
        ),
        ("CloudWatch Logs ingestion (standard class)", f"${costs.PRICE_LOG_GB:.2f} per GB", "`P_log`"),
        ("CloudWatch Logs storage", f"${costs.PRICE_LOG_STORED_GB_MONTH:.2f} per GB-month", "—"),
        ("CloudWatch custom metrics", f"${costs.PRICE_METRIC_MONTH:.2f} per metric per month", "`P_metric`"),
        ("CloudWatch alarms (standard)", f"${costs.PRICE_ALARM_MONTH:.2f} per alarm per month", "`P_alarm`"),
        ("SNS publishes", f"${costs.PRICE_SNS_PUBLISH * 1e6:.2f} per million", "—"),
    ]
    return ["| item | price | symbol |", "|---|---|---|", *(f"| {a} | {b} | {c} |" for a, b, c in rows)]


def _inputs(h: Hold) -> list[str]:
    measured = [
        costs.TYPICAL_OPERATIONS,
        costs.TYPICAL_INVOCATIONS,
        costs.LOG_BYTES_PER_DRAIN,
        costs.SOLO_FIXED_REQUESTS,
        costs.SNS_PUBLISHES_PER_DRAIN,
        costs.HOLD_OUTSIDE_LOOP_OPERATIONS,
    ]
    rows = [f"| {m.what} | {m.value:g} | `{m.command}`, {m.on} |" for m in measured]
    first, later = costs.FIRST_PASS, costs.HELD_PASS
    rows += [
        f"| a held drain's first pass: Kubernetes requests, billed seconds (it watches the budget 30 s) | "
        f"{first.requests:g}, {first.seconds:g} s | `{costs.HOLD}`, {costs.HOLD_MEASURED_ON} |",
        f"| each later held pass: Kubernetes requests, billed seconds | {later.requests:g}, {later.seconds:g} s | "
        f"`{costs.HOLD}`, {costs.HOLD_MEASURED_ON} |",
        f"| compute of a drain done in one pass, besides its pods' termination | {costs.TYPICAL_COMPUTE_SECONDS:g} s "
        "| estimate: a cold start's imports, the steps |",
        f"| a resumed invocation's replay | {costs.REPLAY_SECONDS:g} s | estimate |",
        f"| logs of each later drain pass | {costs.LOG_BYTES_PER_LATER_PASS / 1000:g} KB | estimate |",
        f"| durable data written per operation | {costs.WRITTEN_BYTES_PER_OPERATION / 1024:g} KB | estimate |",
    ]
    return ["| input | value | measured by |", "|---|---|---|", *rows]


def _three_drains(h: Hold) -> list[str]:
    slow = 30
    drains = [costs.typical_drain(), costs.typical_drain(slow), h.drain()]
    now = h.now
    head = [
        f"| | a terminate drain done in one pass | the same, pods taking {slow} s to stop | "
        f"held {HOLD_HOURS} h by a PDB that never allows |",
        "|---|---|---|---|",
    ]
    rows = [
        ("durable operations", *(f"{d.operations:,.0f}" for d in drains)),
        (
            "billed compute",
            f"{drains[0].compute_seconds:g} s",
            f"{drains[1].compute_seconds:g} s",
            f"{now.passes} passes ({now.compute_seconds:.0f} s) and {now.waits + 1} replays: "
            f"{drains[2].compute_seconds:.0f} s",
        ),
        ("invocations", *(f"{d.invocations:,.0f}" for d in drains)),
        (
            "Kubernetes requests",
            *(f"{10 + costs.SOLO_FIXED_REQUESTS.value:g} for 10 pods" for _ in range(2)),
            f"{now.requests:,} ({h.per_minute(now):.2f} a minute)",
        ),
        ("logs", *(size(d.log_bytes) for d in drains)),
    ]
    lines = [f"| {' | '.join(r)} |" for r in rows]
    for line in drains[0].dollars():
        lines.append(f"| {line}, $ | {' | '.join(money(d.dollars()[line]) for d in drains)} |")
    lines.append(f"| **total, $** | {' | '.join(f'**{money(d.total())}**' for d in drains)} |")
    return head + lines


def _hold_table(h: Hold) -> list[str]:
    head = [
        "| | requests | requests / min | billed step seconds | % of the hold billed | compute $ | durable operations |",
        "|---|---|---|---|---|---|---|",
    ]
    out = []
    for name, loop in (("before (passes poll for their budget)", h.before), ("now (held passes end early)", h.now)):
        dollars = loop.compute_seconds * costs.MEMORY_GB * costs.PRICE_GB_SECOND
        out.append(
            f"| {name} | {loop.requests:,} | {h.per_minute(loop):.2f} | {loop.compute_seconds:,.0f} | "
            f"{percent(100 * loop.compute_seconds / h.seconds)} | {money(dollars)} | {h.operations(loop):,} |"
        )
    return head + out


def _recheck_table() -> list[str]:
    """What HELD_RECHECK_MAX_SECONDS trades over the same hold: requests and loop operations at a few values."""
    out = [
        "| `HELD_RECHECK_MAX_SECONDS` | requests | requests / min | durable operations |",
        "|---|---|---|---|",
    ]
    for seconds in (900, 600, 300):
        ws = dataclasses.replace(WorkflowSettings(), held_recheck_max_seconds=seconds)
        loop = held_model(HOLD_HOURS * 3600.0, ws, HOLD_HEARTBEAT_TIMEOUT, costs.FIRST_PASS, costs.HELD_PASS)
        ops = loop.loop_operations + int(costs.HOLD_OUTSIDE_LOOP_OPERATIONS.value)
        per_minute = loop.requests / (HOLD_HOURS * 60)
        out.append(
            f"| {seconds}{' (default)' if seconds == 900 else ''} | {loop.requests:,} | {per_minute:.2f} | {ops:,} |"
        )
    return out


def _fixed() -> list[str]:
    low, high = costs.METRIC_SERIES_PER_CLUSTER
    sweep = costs.sweep_month()
    live = costs.liveness_month()
    alarms = costs.ALARMS_FIXED + costs.ALARMS_PER_CLUSTER
    metrics = f"${low * costs.PRICE_METRIC_MONTH:.0f}\N{EN DASH}{high * costs.PRICE_METRIC_MONTH:.0f}"
    return [
        "| item | per month | basis |",
        "|---|---|---|",
        f"| custom metrics | {metrics} per cluster "
        f"| {low}\N{EN DASH}{high} metric series a cluster that sees every event kind (estimate) |",
        f"| alarms | ${alarms * costs.PRICE_ALARM_MONTH:.2f} for one cluster | {costs.ALARMS_FIXED} + "
        f"{costs.ALARMS_PER_CLUSTER} per cluster |",
        f"| the surge sweep's schedule (`surgeSweepMinutes` 15) | ${sweep['dollars']:.2f} | {sweep['ticks']:,} "
        f"executions of {costs.SWEEP_OPERATIONS} durable operations and at most {costs.SWEEP_SECONDS:g} s each "
        "(estimate) |",
        f"| the liveness check's schedule (every {costs.LIVENESS_MINUTES} min) | ${live['dollars']:.2f} "
        f"| {live['ticks']:,} executions of {costs.LIVENESS_OPERATIONS} durable operations and about "
        f"{costs.LIVENESS_SECONDS:g} s each (estimate) |",
        f"| dashboard | $0 or ${costs.PRICE_DASHBOARD_MONTH:.0f} | an account's first three dashboards are free |",
    ]


def render() -> str:
    h = hold()
    parts = [
        [BEGIN, "", f"Prices assumed ({costs.PRICES_AS_OF}):", ""],
        _prices(),
        ["", "Inputs:", ""],
        _inputs(h),
        ["", "Per drain (512 MB, arm64, default settings, a terminate lifecycle hook):", ""],
        _three_drains(h),
        [
            "",
            f"A {HOLD_HOURS} h hold (heartbeat timeout {HOLD_HEARTBEAT_TIMEOUT:,} s), the loop as it is and the "
            "loop before held passes ended early:",
            "",
        ],
        _hold_table(h),
        ["", f"The same {HOLD_HOURS} h hold at other ceilings of the held waits:", ""],
        _recheck_table(),
        ["", "Fixed, per month:", ""],
        _fixed(),
        ["", END],
    ]
    return "\n".join(line for part in parts for line in part)


def main() -> int:
    print(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())

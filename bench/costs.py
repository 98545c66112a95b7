"""What a drain costs, in one place: the list prices assumed, the inputs the benchmarks last measured (each with the
command and the day), the estimates where nothing measures, and the formula. Pure: no bed, no AWS.

`bench/held_cost.py` and `bench/fleet_model.py` take their prices from here; `bench/cost_doc.py` renders the tables
of docs/cost.md from here, and `tests/unit/test_cost_doc.py` fails when the doc says something else. After a
benchmark measures an input again, change it here, then paste `python -m bench.cost_doc` into docs/cost.md.
"""

from __future__ import annotations

from dataclasses import dataclass

# us-east-1 list prices as of December 2026; the durable-function prices are second-hand (unverified)
PRICES_AS_OF = "us-east-1, December 2026"
PRICE_OPERATION = 8.00 / 1e6  # a durable operation (start, step, wait, ...)
PRICE_WRITTEN_GB = 0.25  # durable data written (the checkpoints)
PRICE_RETAINED_GB_MONTH = 0.15  # durable data retained
PRICE_GB_SECOND = 0.0000133334  # Lambda compute, arm64 (the function's architecture)
PRICE_REQUEST = 0.20 / 1e6  # a Lambda request: each invocation of an execution
PRICE_LOG_GB = 0.50  # CloudWatch Logs ingestion, standard class
PRICE_LOG_STORED_GB_MONTH = 0.03
PRICE_METRIC_MONTH = 0.30  # a CloudWatch custom metric (first 10,000)
PRICE_ALARM_MONTH = 0.10  # a standard CloudWatch alarm
PRICE_SNS_PUBLISH = 0.50 / 1e6
PRICE_DASHBOARD_MONTH = 3.00  # after the account's first three
MEMORY_GB = 0.5  # the construct's default memorySize, 512 MB


@dataclass(frozen=True)
class Measured:
    value: float
    what: str
    command: str
    on: str  # the day it was measured


@dataclass(frozen=True)
class PassCost:
    requests: float  # Kubernetes requests of one drain pass
    seconds: float  # billed seconds of one pass (the step's run time)


# A terminate drain done in one pass: the solo drain of `bench_storm` (10 pods of 10 Deployments, hook completed)
SOLO = "python -m bench.bench_storm --nodes 3 --pods-per-node 10"
TYPICAL_OPERATIONS = Measured(8, "durable operations of a terminate drain done in one pass", SOLO, "2026-12-07")
LOG_BYTES_PER_DRAIN = Measured(
    4088, "bytes of logs per drained node (12.0 JSON lines, 5.2 of them EMF)", SOLO, "2026-12-07"
)
SOLO_FIXED_REQUESTS = Measured(10, "Kubernetes requests of a drain besides one eviction a pod", SOLO, "2026-12-07")
SNS_PUBLISHES_PER_DRAIN = Measured(
    2, "notifications of a drain done in one pass (started, completed)", SOLO, "2026-12-07"
)
TYPICAL_INVOCATIONS = Measured(
    1, "invocations of that drain (one, and one more per durable wait: none)", SOLO, "2026-12-07"
)

# A drain held by a PDB that never allows: `make bench-hold` holds one 300 s on the bed with the default pacing
HOLD = "make bench-hold"
FIRST_PASS = PassCost(requests=8, seconds=30.02)  # it watches the budget for 30 s before ending held
HELD_PASS = PassCost(requests=5.2, seconds=0.02)  # every later pass looks once and ends
HOLD_OUTSIDE_LOOP_OPERATIONS = Measured(
    5, "durable operations of a held drain outside its pass loop", HOLD, "2026-12-07"
)
HOLD_MEASURED_ON = "2026-12-07"
# the loop before held passes ended early: every pass polled its whole 120 s budget, 137 requests each
POLLING_PASS = PassCost(requests=137, seconds=120.0)

# Estimates, not measurements
TYPICAL_COMPUTE_SECONDS = 3.0  # a cold start's imports, the steps, one short pass
LOG_BYTES_PER_LATER_PASS = 1000  # a "drain pass" log line and its metrics
REPLAY_SECONDS = 0.1  # a resumed invocation replays its checkpoints: well under a second
WRITTEN_BYTES_PER_OPERATION = 1024  # checkpoint data written per durable operation
METRIC_SERIES_PER_CLUSTER = (40, 60)  # ~10 drain metrics x the kinds a cluster sees, EventsReceived, Errors reasons
SWEEP_OPERATIONS = 3  # a surge sweep tick: the start, the settings step, one sweep step
SWEEP_SECONDS = 1.0  # at most, when nothing is left behind
LIVENESS_MINUTES = 30  # the liveness check's schedule (infra/failure_alarms.py)
LIVENESS_OPERATIONS = 3  # a liveness check: the start, the settings step, the liveness step
LIVENESS_SECONDS = 0.2  # a warm invocation that validates settings and counts one metric (estimate)

# The construct's alarms: tests/infra/test_doc_alarms.py checks these against a synthesized stack
# FunctionErrors, one per dead-letter queue, StepsFailing, Throttles, AsyncEventAge, EventBridgeFailedInvocations,
# Liveness
ALARMS_FIXED = 8
ALARMS_PER_CLUSTER = 3  # DeadlineMissed-<cluster>, DrainHeld-<cluster>, LifecycleAccessDenied-<cluster>


@dataclass(frozen=True)
class DrainCost:
    """What one drain is billed, by line."""

    operations: float
    compute_seconds: float
    invocations: float
    log_bytes: float

    @property
    def written_bytes(self) -> float:
        return self.operations * WRITTEN_BYTES_PER_OPERATION

    def dollars(self) -> dict[str, float]:
        return {
            "durable operations": self.operations * PRICE_OPERATION,
            "compute": self.compute_seconds * MEMORY_GB * PRICE_GB_SECOND,
            "requests": self.invocations * PRICE_REQUEST,
            "logs": self.log_bytes / 1e9 * PRICE_LOG_GB,
            "data written": self.written_bytes / 1e9 * PRICE_WRITTEN_GB,
        }

    def total(self) -> float:
        return sum(self.dollars().values())


def typical_drain(pod_seconds: float = 0.0) -> DrainCost:
    """A terminate drain done in one pass whose pods take ``pod_seconds`` to stop."""
    return DrainCost(
        TYPICAL_OPERATIONS.value,
        TYPICAL_COMPUTE_SECONDS + pod_seconds,
        TYPICAL_INVOCATIONS.value,
        LOG_BYTES_PER_DRAIN.value,
    )


def liveness_month() -> dict[str, float]:
    """The liveness check's schedule for a 30-day month, as sweep_month counts the sweep's."""
    ticks = 30 * 24 * 60 // LIVENESS_MINUTES
    gb_seconds = ticks * LIVENESS_SECONDS * MEMORY_GB
    operations = ticks * LIVENESS_OPERATIONS
    dollars = operations * PRICE_OPERATION + gb_seconds * PRICE_GB_SECOND + ticks * PRICE_REQUEST
    return {"ticks": ticks, "operations": operations, "gb_seconds": gb_seconds, "dollars": dollars}


def sweep_month(minutes: int = 15) -> dict[str, float]:
    """The surge sweep's schedule for a 30-day month: executions, durable operations, GB-seconds and dollars."""
    ticks = 30 * 24 * 60 // minutes
    gb_seconds = ticks * SWEEP_SECONDS * MEMORY_GB
    operations = ticks * SWEEP_OPERATIONS
    dollars = operations * PRICE_OPERATION + gb_seconds * PRICE_GB_SECOND + ticks * PRICE_REQUEST
    return {"ticks": ticks, "operations": operations, "gb_seconds": gb_seconds, "dollars": dollars}

"""The chaos soak's plan and report: what happens when (a pure function of the seed), what each execution did, and
the report's shape. The soak itself (soak.py) builds the fleet, delivers the plan and checks the invariants."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from testbed.soak_check import Violation

SERVED, OTHER = "blue", "green"
ROLE = "drain-orchestrator"
ASG, OTHER_ASG, HOOK = "soak-blue", "soak-green", "drain"
FOREIGN_HOOK = "other-tool"  # another tool's terminate hook on our ASG: never ours to heartbeat or complete
UNKNOWN = "i-0000000000000dead"
# settings the soak runs the function with: short deadlines so every verdict falls inside the run
SETTINGS = {
    "LIFECYCLE_HOOK_NAMES": HOOK,
    "DEADLINE_ASG_TERMINATE_SECONDS": "90",
    "DEADLINE_STATE_CHANGE_SECONDS": "60",
    "SCHEDULED_CHANGE_LEAD_SECONDS": "30",
    "DRAIN_PASS_SECONDS": "5",
    "RECHECK_MIN_SECONDS": "1",
    "RECHECK_MAX_SECONDS": "10",
}
EPISODES = ("asg-terminate", "asg-terminate-duplicate", "three-at-once", "spot", "state-change", "rebalance",
            "scheduled-change", "capacity-reservation")  # fmt: skip
STRAYS = ("other-cluster-hook", "unknown-instance", "malformed", "karpenter-node")
FAULTS = ("apiserver-restart", "etcd-restart", "access-revoked", "aws-throttle", "aws-5xx", "sns-down",
          "lambda-killed", "node-deleted")  # fmt: skip
# the function's timeout for the local runner, which re-invokes an invocation that ran this long but cannot stop
# its thread (Lambda stops the sandbox): far above any live invocation, so no two invocations of one execution
# ever run at once; a killed invocation is an invocation error instead, retried after the runner's backoff
INVOCATION_TIMEOUT = 300
HOOK_HEARTBEAT_TIMEOUT = 60
KILL_POINT = "pass-"  # runtime.inject_fault's name for the start of a drain pass (pass-0, pass-1, ...)


@dataclass
class Planned:
    at: float  # seconds after the start
    what: str
    instance: str | None = None


@dataclass
class Execution:
    what: str
    instance: str | None
    sent_at: float
    status: str = "RUNNING"
    result: dict[str, Any] | None = None
    error: str | None = None
    operations: int = 0
    ended_at: float | None = None


@dataclass
class SoakReport:
    seed: int
    minutes: float
    events: dict[str, int] = field(default_factory=dict)
    executions: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)
    failed_executions: int = 0  # to the dead-letter queue with their event: malformed ones, and drains that failed
    event_to_verdict_p50_s: float | None = None
    event_to_verdict_p99_s: float | None = None
    max_operations: int = 0
    killed_invocations: int = 0
    duplicate_finals: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    violations: list[Violation] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        lines = [
            f"soak seed={self.seed} minutes={self.minutes} wall={self.wall_s:.0f}s executions={self.executions}",
            f"  events:   {dict(sorted(self.events.items()))}",
            f"  faults:   {dict(sorted(self.faults.items()))}; invocations killed mid-pass: {self.killed_invocations}",
            f"  verdicts: {dict(sorted(self.verdicts.items()))}; failed executions: {self.failed_executions}",
            f"  event -> verdict: p50 {self.event_to_verdict_p50_s}s, p99 {self.event_to_verdict_p99_s}s; "
            f"most durable operations in one execution: {self.max_operations}",
            f"  final notifications sent twice where no claim could arbitrate (node deleted, apiserver down): "
            f"{self.duplicate_finals or 'none'}",
            f"  invariant violations: {len(self.violations)}",
        ]
        lines += [f"    - {v.invariant}: {v.detail} (replay: --seed {self.seed})" for v in self.violations]
        return "\n".join(lines)


def plan(seed: int, minutes: float, instances: list[str], strays: int) -> tuple[list[Planned], list[Planned]]:
    """Which instance gets which episode and when, and when which fault strikes: a pure function of the seed."""
    rng = random.Random(seed)
    window = max(30.0, minutes * 60 - 120)  # the last two minutes are for verdicts (deadlines are <= 120 s)
    events = [Planned(rng.uniform(0, window), rng.choice(EPISODES), iid) for iid in instances]
    events += [Planned(rng.uniform(0, window), STRAYS[i % len(STRAYS)]) for i in range(strays)]
    # a fault every 8-25 s in short runs, every 15-40 s in long ones (they overlap the executions they hit)
    gap = (8.0, 25.0) if minutes < 10 else (15.0, 40.0)
    faults, t = [], rng.uniform(3, gap[0])
    while t < window:
        faults.append(Planned(t, rng.choice(FAULTS)))
        t += rng.uniform(*gap)
    return sorted(events, key=lambda p: p.at), faults

"""Events for instances a tool must leave alone, given to the orchestrator and to NTH: an instance of another
cluster (in the same account, tagged for NTH as every cluster's instances are when the default tag key is shared,
with an active terminate hook that the other cluster's tool is meant to complete) and an instance id EC2 does not
know. This is what made NTH crash-loop in queue-processor mode before v1.13.1. Recorded per tool: the outcome
(execution status and decision; process still running or exited), the tool's log lines naming the instance, what
is left on NTH's queue, and whether the hook was left alone (still ACTIVE) or completed, and by whom.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import nth, storm
from testbed import samples
from testbed.aws_seed import AwsSeed
from testbed.bed import Testbed

OTHER_ASG = "ng-green"
OTHER_TAGS = {"kubernetes.io/cluster/green": "owned", nth.MANAGED_TAG: ""}
UNKNOWN_ID = "i-0badc0ffee0000000"  # an id EC2 does not know (gone for hours, or a typo in a replayed event)
# NTH's ReceiveMessage uses a 20 s visibility timeout and 20 s long polls: three redeliveries fit in 75 s
WINDOW_S = 75.0


@dataclass
class StrayCase:
    case: str  # "other cluster" | "unknown instance"
    instance_id: str
    token: str
    names: tuple[str, ...]  # what a log line about it may name: the instance id, its private DNS name


@dataclass
class StrayOutcome:
    tool: str
    case: str
    outcome: str
    hook: str  # the lifecycle action's state afterwards, with who completed it
    log: list[str] = field(default_factory=list)  # distinct log messages naming the instance, "(xN)" if repeated


@dataclass
class NthWindow:
    """NTH's side of one observation window."""

    flags: list[str]
    alive: bool
    exit_code: int | None
    receives: int  # ReceiveMessage calls NTH made in the window
    deletes: int
    completes: int  # CompleteLifecycleAction calls NTH made in the window
    queue_left: dict[str, int]


def seed(aws: AwsSeed) -> list[StrayCase]:
    (other,) = aws.asg(OTHER_ASG, size=1, tags=OTHER_TAGS, hooks=({"name": storm.HOOK, "heartbeat_timeout": 600},))
    dns = aws.describe(other)["PrivateDnsName"]
    return [
        StrayCase("other cluster", other, aws.start_lifecycle_action(OTHER_ASG, storm.HOOK, other), (other, dns)),
        StrayCase(
            "unknown instance", UNKNOWN_ID, aws.start_lifecycle_action(OTHER_ASG, storm.HOOK, UNKNOWN_ID), (UNKNOWN_ID,)
        ),
    ]


def event(c: StrayCase) -> dict[str, Any]:
    ev = samples.lifecycle_event(
        "asg-terminate.json", instance_id=c.instance_id, asg=OTHER_ASG, hook=storm.HOOK, token=c.token
    )
    ev["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return nth.unique_id(ev)


def hook_state(aws: AwsSeed, c: StrayCase) -> str:
    for a in aws.lifecycle_actions():
        if a["token"] == c.token:
            if a["state"] == "ACTIVE":
                return "ACTIVE (left alone)"
            return f"{a['state']} {a.get('result') or ''} by {a.get('completed_by')}".replace("  ", " ")
    return "missing"


def _distinct(lines: list[str]) -> list[str]:
    return [f"{m} (x{n})" if n > 1 else m for m, n in Counter(lines).items()]


def _decision(result: dict[str, Any] | None) -> str:
    if not result:
        return "no result"
    skipped = [f"{i['reason']} → {i['action']}" for i in result.get("not_acted_on", [])]
    acted = [str(i.get("action", i)) for i in result.get("instances", [])]
    return "; ".join([*(f"not acted on: {x}" for x in skipped), *(f"acted on: {x}" for x in acted)]) or "no decision"


def orchestrator(aws: AwsSeed, cases: list[StrayCase], handler_log: Path | None) -> list[StrayOutcome]:
    """Each event as one durable execution of the real handler (the Lambda's environment is already set)."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    from drain_orchestrator.handler import handler

    out = []
    for c in cases:
        start = handler_log.stat().st_size if handler_log else 0
        with DurableFunctionTestRunner(handler=handler) as runner:
            res = runner.run(input=json.dumps(event(c)), execution_timeout=120)
        status = getattr(res.status, "name", str(res.status))
        result = json.loads(res.result) if res.result else None
        logged: list[str] = []
        if handler_log:
            with handler_log.open("rb") as f:
                f.seek(start)
                for ln in f.read().decode(errors="replace").splitlines():
                    if ln.startswith("{") and '"_aws"' not in ln and any(n in ln for n in c.names):
                        rec = json.loads(ln)
                        logged.append(f"{rec.get('level', '')} {rec.get('message', '')}".strip()[:160])
        outcome = f"execution {status}; " + _decision(result)
        out.append(StrayOutcome("orchestrator", c.case, outcome, hook_state(aws, c), _distinct(logged)))
    return out


def nth_window(
    bed: Testbed, aws: AwsSeed, api: Any, queue_url: str, cases: list[StrayCase], workdir: Path, flags: tuple[str, ...]
) -> tuple[NthWindow, list[StrayOutcome]]:
    """A fresh NTH process with ``flags`` on an emptied queue for WINDOW_S seconds; the events are sent at its
    start."""
    aws.client("sqs").purge_queue(QueueUrl=queue_url)  # what the previous window left, in flight or not
    proc = nth.start(bed, api, queue_url, workdir, flags)
    try:
        proc.wait_started()
        before = storm.aws_requests(aws)
        nth.send_events(aws, queue_url, [event(c) for c in cases])
        deadline = time.monotonic() + WINDOW_S
        while time.monotonic() < deadline and proc.alive():
            time.sleep(1)
        after = storm.aws_requests(aws)
        alive = proc.alive()
    finally:
        proc.stop()

    def calls(action: str) -> int:
        k = (nth.ACCESS_KEY, "sqs" if action != "CompleteLifecycleAction" else "autoscaling", action)
        return after.get(k, 0) - before.get(k, 0)

    window = NthWindow(
        flags=list(flags),
        alive=alive,
        exit_code=None if alive else proc.proc.returncode,
        receives=calls("ReceiveMessage"),
        deletes=calls("DeleteMessage"),
        completes=calls("CompleteLifecycleAction"),
        queue_left=nth.queue_depth(aws, queue_url),
    )
    lines = proc.lines()
    label = "NTH" + (f" {' '.join(flags)}" if flags else " (defaults)")
    outcomes = []
    for c in cases:
        logged = [
            f"{ln.get('level', '')} {ln.get('message', '')}: {ln.get('error', '')}".rstrip(": ")[:200]
            for ln in lines
            if any(n in json.dumps(ln) for n in c.names)
        ]
        state = "running" if alive else f"exited {window.exit_code}"
        outcomes.append(StrayOutcome(label, c.case, f"process {state}", hook_state(aws, c), _distinct(logged)))
    return window, outcomes

"""A drain's timeline from its durable execution's history (pure): one row per step, wait and callback of the
execution and of the instance's branch, with when it started, how long it took, what came of it and why.

The history is the durable-execution service's record (GetDurableExecutionHistory): for each operation its start
and end events, with the step's checkpointed result. Step names and results are a contract with running
executions (docs/architecture.md), so reading them here stays valid across releases: a step this module does not
know is shown with its result's scalar fields.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from drain_orchestrator.aws.executions import ExecutionSummary, epoch
from drain_orchestrator.cli import step_notes
from drain_orchestrator.cli.step_notes import DETAIL_LIMIT, fields
from drain_orchestrator.clip import clip
from drain_orchestrator.ownership import Decision

_DECIDE = re.compile(r"decide(?:-(\d+))?(?:-retry-\d+)?")
_MAP_ITEM = re.compile(r"map-item-(\d+)")
_INSTANCE_ID = re.compile(r"i-[0-9a-f]{8,17}")
_ENDS = {
    "ExecutionSucceeded": "succeeded",
    "ExecutionFailed": "failed",
    "ExecutionTimedOut": "timed-out",
    "ExecutionStopped": "stopped",
}


@dataclass
class Operation:
    """One step, wait, callback or context of the execution, from its events in the history."""

    id: str
    name: str
    type: str  # Step | Wait | Callback | Context | ChainedInvoke
    subtype: str
    parent: str | None
    started: float
    ended: float | None = None
    status: str = "running"  # running | succeeded | failed | cancelled | timed-out | stopped
    result: Any = None  # the parsed result payload
    error: dict[str, Any] | None = None
    wait_until: float | None = None
    attempts: int = 0


@dataclass(frozen=True)
class Step:
    """A row of the timeline."""

    at: float
    name: str
    type: str  # step | wait | callback | execution
    outcome: str  # what came of it, in a word or two
    detail: str  # why, or what it found
    seconds: float | None  # how long it took; None while it runs
    data: Any = None  # the step's result as checkpointed (JSON only)


@dataclass
class Timeline:
    execution: ExecutionSummary
    kind: str | None  # the event kind (asg-terminate, spot-interruption, ...)
    event_id: str | None
    instance_id: str | None
    node: str | None
    verdict: str  # the instance's result (drained, deadline-missed, ...) or the execution's status
    steps: list[Step] = field(default_factory=list)

    @property
    def version(self) -> str:
        parts = self.execution.function_arn.split(":")
        return parts[7] if len(parts) == 8 else "-"

    def to_json(self) -> dict[str, Any]:
        return {
            "execution": {**asdict(self.execution), "version": self.version},
            "kind": self.kind,
            "event_id": self.event_id,
            "instance_id": self.instance_id,
            "node": self.node,
            "verdict": self.verdict,
            "steps": [asdict(s) for s in self.steps],
        }


def is_instance_id(target: str) -> bool:
    return bool(_INSTANCE_ID.fullmatch(target))


def operations(events: Iterable[dict[str, Any]]) -> list[Operation]:
    """The history's events folded into operations, in the order they started."""
    ops: dict[str, Operation] = {}
    for event in events:
        kind = str(event.get("EventType", ""))
        op_type = next((t for t in ("ChainedInvoke", "Step", "Wait", "Callback", "Context") if kind.startswith(t)), "")
        if not op_type or not event.get("Id"):
            continue  # execution-level and invocation events: read by build()
        at = epoch(event.get("EventTimestamp")) or 0.0
        op = ops.setdefault(
            str(event["Id"]),
            Operation(str(event["Id"]), str(event.get("Name") or ""), op_type, str(event.get("SubType") or ""),
                      event.get("ParentId"), at),
        )  # fmt: skip
        details = next((v for k, v in event.items() if k.endswith("Details") and isinstance(v, dict)), {})
        phase = kind[len(op_type) :]
        if phase == "Started":
            op.attempts += 1
            op.status, op.ended = "running", None
            op.wait_until = epoch(details.get("ScheduledEndTimestamp"))
        else:
            op.ended = at
            op.status = {"Succeeded": "succeeded", "Failed": "failed", "Cancelled": "cancelled"}.get(
                phase, re.sub(r"(?<!^)([A-Z])", r"-\1", phase).lower()
            )
            op.result = _payload(details.get("Result"))
            op.error = details.get("Error")
    return list(ops.values())


def build(summary: ExecutionSummary, events: list[dict[str, Any]], target: str) -> Timeline | None:
    """The timeline of ``target`` (an instance id or a node name) in this execution, or None when the execution
    is not about it."""
    ops = operations(events)
    event = _event(ops)
    decided = _decided(ops)
    branches = _branches(ops, decided)
    instance_id, node, branch = _find(target, event, decided, branches, _located(ops, branches))
    if instance_id is None and node is None:
        return None
    wanted = _descendants(ops, branch) if branch and branch != ROOT else set()
    shown = [op for op in ops if (op.parent is None and op.subtype != "Map") or op.id in wanted]
    timeline = Timeline(
        execution=summary,
        kind=event.get("kind"),
        event_id=event.get("event_id"),
        instance_id=instance_id,
        node=node,
        verdict=summary.status,
    )
    started = _execution_event(events, "ExecutionStarted")
    if started is not None:
        timeline.steps.append(_start_row(started, event))
    for op in shown:
        if op.type != "Context":
            timeline.steps.append(_row(op, instance_id))
    ended = next((e for e in events if e.get("EventType") in _ENDS), None)
    if ended is not None:
        row = _end_row(ended, summary, instance_id)
        timeline.verdict = row.outcome
        timeline.steps.append(row)
    return timeline


# ---- which instance and branch ------------------------------------------------------------------------------------


def _event(ops: list[Operation]) -> dict[str, Any]:
    """The parsed event: the admit step's, or (executions of earlier releases) the parse step's."""
    for op in ops:
        if op.parent is None and op.name in ("admit", "parse") and isinstance(op.result, dict):
            parsed = op.result.get("parsed") if op.name == "admit" else op.result
            return dict((parsed or {}).get("event") or {})
    return {}


def _decided(ops: list[Operation]) -> list[dict[str, Any]]:
    """The assessments of the decide steps that succeeded, chunk by chunk (decide, decide-1, …; retries replace),
    the admit step's decision first."""
    chunks: dict[int, list[dict[str, Any]]] = {}
    for op in ops:
        if op.parent is not None or not isinstance(op.result, dict):
            continue
        name, result = op.name, op.result
        if name == "admit":  # its decision is the first chunk's ("decide-retry-N" replace it)
            name, result = "decide", result.get("decided") or {}
        found = _DECIDE.fullmatch(name)
        if found and result and not result.get("fault"):
            chunks[int(found.group(1) or 0)] = list(result.get("assessments") or [])
    return [a for k in sorted(chunks) for a in chunks[k]]


ROOT = "execution"  # the branch of an event's one instance: the execution's own context (no map)


def _branches(ops: list[Operation], decided: list[dict[str, Any]]) -> dict[str, str]:
    """Instance id -> the id of its branch of the map: the n-th instance acted on runs in map item n; without a map,
    the one instance acted on runs in the execution's own context (ROOT)."""
    acted = [a["decision"]["instance_id"] for a in decided if Decision.from_dict(a["decision"]).acts]
    out: dict[str, str] = {}
    for op in ops:
        item = _MAP_ITEM.fullmatch(op.name) if op.type == "Context" else None
        if item and int(item.group(1)) < len(acted):
            out[acted[int(item.group(1))]] = op.id
    if not out and len(acted) == 1 and not any(op.subtype == "Map" for op in ops):
        out[acted[0]] = ROOT
    return out


def _located(ops: list[Operation], branches: dict[str, str]) -> dict[str, str]:
    """Instance id -> the node its branch's locate step (or begin step) found."""
    instance_of = {branch: instance for instance, branch in branches.items()}
    out: dict[str, str] = {}
    for op in ops:
        branch = ROOT if op.parent is None else op.parent
        located = op.result if op.name == "locate" else None
        if op.name == "begin" and isinstance(op.result, dict):
            located = op.result.get("located")
        node = (located.get("decision") or {}).get("node") if isinstance(located, dict) else None
        if node and branch in instance_of:
            out[instance_of[branch]] = str(node)
    return out


def _find(
    target: str,
    event: dict[str, Any],
    decided: list[dict[str, Any]],
    branches: dict[str, str],
    located: dict[str, str],
) -> tuple[str | None, str | None, str | None]:
    """(instance id, node, branch id) of the target, or Nones when the execution does not name it. A node is
    named by the node its drain found, or by the instance's private DNS name (how the function looks it up)."""
    for a in decided:
        instance = a["decision"]["instance_id"]
        dns = (a.get("facts") or {}).get("private_dns_name")
        if target in (instance, dns, located.get(instance)):
            return instance, located.get(instance) or (target if target == dns else None), branches.get(instance)
    if target in (event.get("instance_ids") or []):  # not decided yet (or deciding failed)
        return target, None, None
    return None, None, None


def _descendants(ops: list[Operation], root: str) -> set[str]:
    found, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for op in ops:
            if op.parent == parent and op.id not in found:
                found.add(op.id)
                frontier.append(op.id)
    return found


# ---- rows ------------------------------------------------------------------------------------------------------------


def _execution_event(events: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((e for e in events if e.get("EventType") == kind), None)


def _start_row(started: dict[str, Any], event: dict[str, Any]) -> Step:
    details = started.get("ExecutionStartedDetails") or {}
    raw = _payload(details.get("Input")) or {}
    what = event.get("detail_type") or (raw.get("detail-type") if isinstance(raw, dict) else None) or "input"
    ids = event.get("instance_ids") or []
    detail = f"{what}" + (f" {event['event_id']}" if event.get("event_id") else "")
    if ids:
        detail += f", {len(ids)} instance{'s' if len(ids) != 1 else ''}"
    at = epoch(started.get("EventTimestamp")) or 0.0
    return Step(at, "execution", "execution", "started", clip(detail, DETAIL_LIMIT), 0.0)


def _end_row(ended: dict[str, Any], summary: ExecutionSummary, instance_id: str | None) -> Step:
    kind = str(ended["EventType"])
    details = next((v for k, v in ended.items() if k.endswith("Details") and isinstance(v, dict)), {})
    result = _payload(details.get("Result"))
    at = epoch(ended.get("EventTimestamp")) or 0.0
    status = _ENDS[kind]
    listed = result if isinstance(result, dict) else {}
    mine = next((i for i in listed.get("instances") or [] if i.get("instance_id") == instance_id), None)
    skipped = next((d for d in listed.get("not_acted_on") or [] if d.get("instance_id") == instance_id), None)
    if skipped is not None:
        outcome, detail = "not acted on", f"{skipped.get('reason')} (cluster {skipped.get('cluster') or '-'})"
    elif mine is not None:
        lifecycle = (mine.get("lifecycle") or {}).get("result")
        error = mine.get("error") or {}
        why = [f"lifecycle action {lifecycle}" if lifecycle else ""]
        why.append(f"{error.get('step')} {error.get('kind')}: {error.get('message')}" if error else "")
        why.append(f"drain took {mine['duration_seconds']} s" if mine.get("duration_seconds") is not None else "")
        detail = ", ".join(w for w in why if w)
        outcome = str(mine.get("result") or mine.get("action") or status)
    elif isinstance(result, dict) and result.get("ignored"):
        outcome, detail = "ignored", f"{result['ignored']}: {result.get('message') or ''}"
    else:
        error = details.get("Error") or {}
        outcome, detail = status, " ".join(str(error.get(k) or "") for k in ("ErrorType", "ErrorMessage")).strip()
    return Step(at, "execution", "execution", outcome, clip(detail, DETAIL_LIMIT), at - summary.started, result)


def _row(op: Operation, instance_id: str | None) -> Step:
    seconds = None if op.ended is None else max(op.ended - op.started, 0.0)
    if op.type == "Wait":
        until = f" until {_clock(op.wait_until)}" if op.wait_until else ""
        outcome = "waiting" if op.status == "running" else ("waited" if op.status == "succeeded" else op.status)
        return Step(op.started, op.name, "wait", outcome, until.strip() if op.status == "running" else "", seconds)
    if op.type == "Callback":
        outcome = "waiting" if op.status == "running" else ("answered" if op.status == "succeeded" else op.status)
        return Step(op.started, op.name, "callback", outcome, fields(op.result) if op.result else "", seconds,
                    op.result)  # fmt: skip
    if op.status != "succeeded":
        error = op.error or {}
        detail = " ".join(str(error.get(k) or "") for k in ("ErrorType", "ErrorMessage")).strip()
        tries = f" (attempt {op.attempts})" if op.attempts > 1 else ""
        return Step(op.started, op.name, "step", op.status, clip(detail, DETAIL_LIMIT) + tries, seconds)
    result = op.result if isinstance(op.result, dict) else {"result": op.result}
    fault = result.get("fault")
    if fault:
        outcome, detail = "fault", f"{fault.get('kind')}: {fault.get('message')}"
    else:
        outcome, detail = step_notes.summary(op.name, result, instance_id)
    return Step(op.started, op.name, "step", outcome, clip(detail, DETAIL_LIMIT), seconds, op.result)


def _clock(at: float | None) -> str:
    return "-" if at is None else time.strftime("%H:%M:%SZ", time.gmtime(at))


def _payload(value: Any) -> Any:
    """A history payload ({"Payload": "...", "Truncated": …} or the text itself) parsed as JSON when it is."""
    text = value.get("Payload") if isinstance(value, dict) else value
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text

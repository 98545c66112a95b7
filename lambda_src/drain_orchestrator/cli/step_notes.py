"""What each step of a drain's execution says in one line: an outcome word and a detail, from the step's
checkpointed result (workflow/results.py). Step names are a contract with running executions
(docs/architecture.md), so a prefix here keeps naming the same step across releases; a step not listed here is
shown with its result's scalar fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drain_orchestrator.clip import clip
from drain_orchestrator.ownership import Decision
from drain_orchestrator.timefmt import iso_utc

DETAIL_LIMIT = 160
_QUIET = {"now", "last_beat", "hook_done", "fault", "api_calls"}  # fields no reader needs in a one-line summary

Summary = Callable[[dict[str, Any], str | None], tuple[str, str]]


def summary(name: str, result: dict[str, Any], instance_id: str | None) -> tuple[str, str]:
    """(outcome, detail) of the step ``name`` that returned ``result``, for the instance ``instance_id``."""
    summarize = next((fn for prefix, fn in _SUMMARIES if name.startswith(prefix)), None)
    return summarize(result, instance_id) if summarize else ("ok", fields(result))


def fields(result: Any) -> str:
    if not isinstance(result, dict):
        return clip(str(result), DETAIL_LIMIT)
    shown = [f"{k} {v}" for k, v in result.items() if k not in _QUIET and isinstance(v, str | int | float | bool)
             and v not in (None, "", False)]  # fmt: skip
    shown += [f"{k} {', '.join(map(str, v[:5]))}" for k, v in result.items() if isinstance(v, list) and v
              and all(isinstance(x, str) for x in v)]  # fmt: skip
    return clip(", ".join(shown), DETAIL_LIMIT)


def _when(epoch: Any) -> str:
    return iso_utc(int(epoch)) if isinstance(epoch, int | float) else "-"


def _settings(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    return ("dry run" if result.get("dry_run") else "ok"), f"run id {result.get('run_id')}"


def _parse(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    if result.get("ignored"):
        return "ignored", f"{result['ignored']}: {result.get('message') or ''}"
    event = result.get("event") or {}
    ids = event.get("instance_ids") or []
    return str(event.get("kind") or "ok"), f"{len(ids)} instance{'s' if len(ids) != 1 else ''}"


def _admit(result: dict[str, Any], instance_id: str | None) -> tuple[str, str]:
    """Settings, parse and decide in one step: the decision's words when it decided, else the parse's."""
    run_id = f"run id {(result.get('settings') or {}).get('run_id')}"
    parsed = result.get("parsed") or {}
    decided = result.get("decided")
    outcome, detail = _decide(decided, instance_id) if decided and not decided.get("fault") else _parse(parsed, None)
    return outcome, f"{detail}, {run_id}" if detail else run_id


def _plan(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    beat = result.get("heartbeat_interval")
    return "ok", f"deadline {_when(result.get('deadline'))}" + (f", heartbeat every {beat} s" if beat else "")


def _decide(result: dict[str, Any], instance_id: str | None) -> tuple[str, str]:
    assessments = result.get("assessments") or []
    mine = next((a["decision"] for a in assessments if a["decision"]["instance_id"] == instance_id), None)
    if mine is None:
        return "ok", f"{len(assessments)} instances decided"
    if not Decision.from_dict(mine).acts:
        return "not acted on", f"{mine['reason']} (action {mine['action']})"
    return mine["action"], f"{mine['reason']}, cluster {mine.get('cluster')}"


def _locate(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    node = (result.get("decision") or {}).get("node")
    return ("found", f"node {node}") if node else ("no node", "no Kubernetes node for the instance")


def _cordon(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    if result.get("gone"):
        return "node gone", ""
    claim = result.get("claim") or {}
    role = claim.get("role")
    detail = {"holder": "drains the node", "waiter": f"waits for {claim.get('holder')}'s drain",
              "settled": f"the node's drain ended {claim.get('verdict')}"}.get(str(role), "")  # fmt: skip
    return ("cordoned" if result.get("cordoned") else "not cordoned"), detail


def _begin(result: dict[str, Any], instance_id: str | None) -> tuple[str, str]:
    """The clock, locate, cordon and announcement in one step: what its furthest part said, and the clock's."""
    deadline = _plan(result.get("plan") or {}, instance_id)[1]
    cordoned, located = result.get("cordoned"), result.get("located")
    if cordoned:
        outcome, detail = _cordon(cordoned, instance_id)
        node = ((located or {}).get("decision") or {}).get("node")
        detail = ", ".join(d for d in (f"node {node}" if node else "", detail) if d)
    elif located:
        outcome, detail = _locate(located, instance_id)
    else:
        outcome, detail = str((result.get("plan") or {}).get("proof") or "planned"), ""
    return outcome, ", ".join(d for d in (detail, deadline) if d)


def _drain_pass(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    if result.get("gone"):
        return "node gone", ""
    if result.get("claim_lost"):
        return "claim lost", "another execution took the node's drain over"
    report = result.get("report") or {}
    parts = [f"{len(report.get('evicted') or [])} evicted"]
    blocked = report.get("blocked") or []
    if blocked:
        pdbs = sorted({p for b in blocked for p in b.get("pdbs") or []})
        parts.append(f"{len(blocked)} blocked by PDB {', '.join(pdbs) or '?'}")
    for key in ("forced", "refused", "failed", "held_by_policy"):
        if report.get(key):
            parts.append(f"{len(report[key])} {key.replace('_', ' ')}")
    reasons = sorted({str(h.get("reason")) for h in report.get("held") or [] if h.get("reason") != "pdb"})
    if reasons:
        parts.append(f"held: {', '.join(reasons)}")
    if report.get("remaining") and not report.get("drained"):
        parts.append(f"{len(report['remaining'])} left")
    parts += [f"surge {s.get('workload')}: {s.get('status')}" for s in report.get("surge") or []]
    outcome = "drained" if report.get("drained") else ("held" if result.get("held") or blocked else "in progress")
    return outcome, ", ".join(parts)


def _gate(key: str) -> Summary:
    def summarize(result: dict[str, Any], _: str | None) -> tuple[str, str]:
        holding = result.get(key) or []
        return ("held", f"{len(holding)}: {', '.join(holding[:5])}") if holding else ("clear", "")

    return summarize


def _completion(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    return str(result.get("outcome")), str(result.get("result") or "")


def _report(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    return ("notified" if result.get("notified") else "reported"), f"drain took {result.get('duration')} s"


def _verdict(result: dict[str, Any], instance_id: str | None) -> tuple[str, str]:
    """The lifecycle action's completion, the surges' restore and the report in one step: how far it went."""
    completion, surge, reported = result.get("completion"), result.get("surge") or {}, result.get("reported")
    parts = (
        [f"lifecycle action {completion.get('outcome')} {completion.get('result') or ''}".strip()] if completion else []
    )
    parts += [f"{len(surge['restored'])} surges restored"] if surge.get("restored") else []
    if reported:
        outcome, detail = _report(reported, instance_id)
        return outcome, ", ".join([*parts, detail])
    failed = (surge or completion or {}).get("fault") or {}
    return "fault", ", ".join([*parts, f"{failed.get('step')}: {failed.get('kind')}: {failed.get('message')}"])


def _announce(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    return ("announced" if result.get("drain_start") else "ok"), str(result.get("drain_start") or "")


def _settle(result: dict[str, Any], _: str | None) -> tuple[str, str]:
    waiters = result.get("waiters") or 0
    detail = f"phase {result.get('phase')}" + (f", {waiters} other executions waited for it" if waiters else "")
    return ("settled" if result.get("settled") else "not settled"), detail


# step name prefix -> its summary (names are a contract: docs/architecture.md); the first prefix that matches
_SUMMARIES: list[tuple[str, Summary]] = [
    ("admit", _admit),
    ("begin", _begin),
    ("settings", _settings),
    ("parse", _parse),
    ("plan", _plan),
    ("announce-event", lambda r, _: ("written" if r.get("written") else "not written", "")),
    ("announce", _announce),
    ("drain-settle", _settle),
    ("decide", _decide),
    ("locate", _locate),
    ("cordon", _cordon),
    ("drain-pass-", _drain_pass),
    ("late-look", _drain_pass),  # a drain pass at a drained node: what it evicted was bound after the cordon
    ("gate-targets-", _gate("holding")),
    ("gate-volumes-", _gate("attached")),
    ("complete-lifecycle", _completion),
    ("report", _report),
    ("verdict", _verdict),
]

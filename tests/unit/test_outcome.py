"""The result table (outcome.RULES): its strings, the metric each result is counted by, the docs' copy of it, and
the per-instance outcome's JSON (the execution output and the notifications carry it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from drain_orchestrator.interruption import Interruption
from drain_orchestrator.outcome import RULES, InstanceOutcome, Result, lifecycle_result, succeeded
from drain_orchestrator.ownership import Decision, Reason
from drain_orchestrator.workflow.job import DrainJob
from drain_orchestrator.workflow.report_step import _count
from drain_orchestrator.workflow.results import DrainPlan

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = {Result.CLAIM_LOST}  # never an instance's result: the drain loop's own signal


def test_the_results_keep_their_strings() -> None:
    assert [r.value for r in Result] == [
        "drained", "node-gone", "cordoned", "refused", "deadline-missed", "gate-held", "failed", "dry-run",
        "approved-continue", "approved-abandon", "claim-lost", "ready", "timed-out", "lifecycle-access-denied",
        "cancelled",
    ]  # fmt: skip
    assert set(RULES) == set(Result)
    assert [r for r in Result if succeeded(r)] == [Result.DRAINED, Result.NODE_GONE, Result.READY]
    assert lifecycle_result(Result.APPROVED_ABANDON, "CONTINUE") == "ABANDON"
    assert lifecycle_result(Result.REFUSED, "ABANDON") == "ABANDON"
    assert lifecycle_result("node-gone", "ABANDON") == "CONTINUE"


def _job() -> DrainJob:
    event = Interruption("asg-terminate", "e1", 0.0, "us-east-1", "1", ("i-0123456789abcdef0",), None, "x")
    decision = Decision("i-0123456789abcdef0", True, "blue", Reason.OWNED_INSTANCE_TAG, "drain", "n1")
    return DrainJob(
        event, decision, DrainPlan(deadline=1.0, completion_deadline=2.0, heartbeat_interval=None, now=0), "r"
    )


def _counted(result: Result, capsys: pytest.CaptureFixture[str]) -> list[tuple[str, dict[str, Any]]]:
    _count(_job(), result, 12.0)
    out = []
    for line in capsys.readouterr().out.splitlines():
        emf = json.loads(line)
        (name,) = [m["Name"] for m in emf["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
        dims = {k: emf[k] for k in ("cluster", "kind", "reason") if k in emf}
        out.append((name, dims))
    return out


def test_a_refused_drain_is_counted_as_refused_never_as_a_missed_deadline(capsys: pytest.CaptureFixture[str]) -> None:
    assert _counted(Result.REFUSED, capsys) == [("DrainRefused", {"cluster": "blue", "kind": "asg-terminate"})]
    assert RULES[Result.REFUSED].alarm is None


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (Result.DRAINED, ["NodesDrained", "DrainDurationSeconds"]),
        (Result.NODE_GONE, ["NodesDrained", "DrainDurationSeconds"]),
        (Result.DEADLINE_MISSED, ["DrainDeadlineMissed"]),
        (Result.GATE_HELD, ["DrainDeadlineMissed"]),
        (Result.FAILED, ["Errors"]),
        (Result.APPROVED_CONTINUE, []),
        (Result.APPROVED_ABANDON, []),
    ],
)
def test_each_result_is_counted_by_its_metric(
    result: Result, expected: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    counted = _counted(result, capsys)
    assert [name for name, _ in counted] == expected
    if result is Result.FAILED:
        assert counted[0][1] == {"reason": "drain-failed"}


def _doc_rows() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "reliability.md").read_text()
    table = text.split("<!-- results: kept equal to outcome.RULES -->", 1)[1].strip().split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells
    return rows


def test_the_docs_table_is_the_code_table() -> None:
    rows = _doc_rows()
    assert sorted(rows) == sorted(r.value for r in Result if r not in INTERNAL)
    for result, rule in RULES.items():
        if result in INTERNAL:
            continue
        _, _, lifecycle, metric, alarm = rows[result.value]
        assert re.sub(r" \(.*", "", metric).strip("`") == (rule.metric or "—"), result
        assert re.sub(r" \(.*", "", alarm).strip("`") == (rule.alarm or "—"), result
        if rule.lifecycle in ("CONTINUE", "ABANDON"):
            assert lifecycle == f"`{rule.lifecycle}`", result


def test_the_outcome_json_has_the_identity_and_what_was_set() -> None:
    early = InstanceOutcome("i-1", "blue", None, "owned-instance-tag", "skip")
    assert early.to_dict() == {
        "instance_id": "i-1", "cluster": "blue", "node": None, "decision": "owned-instance-tag", "action": "skip",
    }  # fmt: skip
    done = InstanceOutcome(
        "i-1", "blue", "n1", "owned-instance-tag", "drain", cordoned=True, result=Result.REFUSED,
        heartbeats=0, duration_seconds=3.5, notified=True,
    )  # fmt: skip
    data = done.to_dict()
    assert data["result"] == "refused" and "report" in data and data["report"] is None  # the verdict ran: no pass
    assert json.loads(json.dumps(data)) == data and InstanceOutcome.from_dict(data) == done
    assert done.reported() == {"result": "refused"}  # the notification's fields, None left out
    assert not done.failed and InstanceOutcome.from_dict({**data, "result": "failed"}).failed


def test_an_outcome_that_never_looked_for_a_node_leaves_node_out_and_round_trips() -> None:
    warm = InstanceOutcome("i-1", "blue", None, "owned-instance-tag", "complete-lifecycle", node_looked=False)
    assert "node" not in warm.to_dict() and "node_looked" not in warm.to_dict()
    assert InstanceOutcome.from_dict(warm.to_dict()).to_dict() == warm.to_dict()
    unlocated = InstanceOutcome("i-2", "blue", None, "owned-instance-tag", "drain")  # looked, found none
    assert unlocated.to_dict()["node"] is None

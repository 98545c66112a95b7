"""docs/runbook.md covers every alarm the construct creates and every `Errors` reason the code emits, and quotes
the dashboard's Logs Insights queries exactly."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from bench import costs
from infra.log_queries import ALL_QUERIES, DASHBOARD_QUERIES

from tests.infra.conftest import REPO_ROOT, Synthesized
from tests.infra.errors_reasons import scan

RUNBOOK = REPO_ROOT / "docs" / "runbook.md"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _headings() -> list[str]:
    return re.findall(r"^#{2,4} (.+)$", RUNBOOK.read_text(encoding="utf-8"), flags=re.MULTILINE)


def test_every_errors_reason_in_the_code_has_a_section() -> None:
    found = scan(REPO_ROOT / "lambda_src")
    assert not found.unresolved, f"Errors reasons the scan cannot resolve (use literals): {found.unresolved}"
    sections = {m.group(1) for h in _headings() if (m := re.fullmatch(r"`([\w-]+)`", h))}
    assert found.reasons >= {"settings", "malformed-event", "locate-failed"}  # the scan sees the code
    assert sorted(found.reasons - sections) == [], "Errors reasons without a section in docs/runbook.md"


def test_scan_resolves_literals_and_step_templates(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "steps.py").write_text(
        textwrap.dedent(
            """
            def counted(step, other=None):
                def wrap(fn):
                    def run():
                        metric("Errors", reason=f"{step}-failed", cluster="x")
                    return run
                return wrap

            @counted("notify")
            def notify(): ...

            counted(step="publish")(print)

            def fault(step, exc):
                metric("Errors", reason=f"{step}-failed")

            def guard(step, result):
                def wrap(fn):
                    return fault(step, None)
                return wrap

            @guard("decide", dict)
            def decide(): ...
            """
        )
    )
    (tmp_path / "pkg" / "other.py").write_text(
        'QUOTA = "quota"\nmetric("Errors", reason=QUOTA)\nmetric("NodesDrained")\nmetric("Errors", reason=why)\n'
    )

    found = scan(tmp_path)

    assert found.reasons == {"notify-failed", "publish-failed", "decide-failed", "quota"}
    assert found.unresolved == ["pkg/other.py:4: why"]


def test_every_alarm_points_at_its_section(multi: Synthesized) -> None:
    anchors = {_slug(h) for h in _headings()}
    alarms = multi.resources("AWS::CloudWatch::Alarm")
    # errors, two queues; a deadline, a lifecycle-access-denied and a held alarm per cluster (3 here): as cost.md prices
    assert len(alarms) == costs.ALARMS_FIXED + 3 * costs.ALARMS_PER_CLUSTER
    for logical_id, alarm in alarms.items():
        description = alarm["Properties"]["AlarmDescription"]
        link = re.search(r"Runbook: docs/runbook\.md#([\w-]+)$", description)
        assert link, f"{logical_id}: no runbook link in {description!r}"
        assert link.group(1) in anchors, f"{logical_id}: docs/runbook.md has no section #{link.group(1)}"


def test_runbook_quotes_every_query_and_the_dashboard_shows_them(single: Synthesized) -> None:
    text = RUNBOOK.read_text(encoding="utf-8")
    for query in ALL_QUERIES:
        assert f"```\n{query.text}\n```" in text, f"query {query.title!r} not quoted verbatim"
    (dashboard,) = single.resources("AWS::CloudWatch::Dashboard").values()
    body = "".join(p if isinstance(p, str) else "" for p in dashboard["Properties"]["DashboardBody"]["Fn::Join"][1])
    for query in DASHBOARD_QUERIES:
        assert query.title in body
        assert query.lines[1].replace('"', '\\"') in body  # the filter, JSON-escaped in the widget's query

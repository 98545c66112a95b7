"""docs/benchmarks.md holds the current result of every benchmark and nothing else: each `make bench-*` target and
each bench module the Makefile runs has its command there, each result section says when it was last run, and the
page stays short (earlier results live in git history, not in the page)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "benchmarks.md"
MAX_LINES = 400


def _makefile_benchmarks() -> tuple[set[str], set[str]]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^(bench[\w-]*):", text, flags=re.MULTILINE))
    modules = set(re.findall(r"-m (bench\.\w+)", text))
    return targets, modules


def test_every_bench_target_and_module_the_makefile_runs_has_its_result() -> None:
    text = DOC.read_text(encoding="utf-8")
    targets, modules = _makefile_benchmarks()
    assert {"bench-drain", "bench-hold", "bench-nth"} <= targets  # the scan sees the Makefile
    assert sorted(t for t in targets if f"make {t}" not in text) == []
    assert sorted(m for m in modules if m not in text) == []


def test_every_result_says_when_it_was_last_run() -> None:
    sections = re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]
    undated = [s.splitlines()[0] for s in sections if not re.search(r"\b20\d\d-\d\d-\d\d\b", s)]
    assert undated == ["Where the goals stand"]  # a summary of the results below


def test_the_page_holds_current_results_only() -> None:
    lines = len(DOC.read_text(encoding="utf-8").splitlines())
    assert lines < MAX_LINES, (
        f"docs/benchmarks.md has {lines} lines: replace a result, do not add to it (git has history)"
    )


# phrases that tell what an earlier version did, not what the current one measures
HISTORY = ("any more", "(it was ", "the loop before", "not re-run", "has since", "since the", "older than", "went from")


def test_the_page_tells_no_history() -> None:
    text = " ".join(DOC.read_text(encoding="utf-8").lower().split())
    assert [p for p in HISTORY if p in text] == [], "say what is measured now, or 'last measured on <date>'"

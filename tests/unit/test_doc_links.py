"""Every relative link in the README, CONTRIBUTING and docs/ reaches a file that exists, and every `#anchor` a
heading of that file: a section renamed or removed cannot leave links into it behind. The files the architecture
and benchmarks docs name in backticks, and the repository paths the sources name in their text, exist too: a module
moved or removed cannot leave its old path behind."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link in a heading keeps its text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: Counter[str] = Counter()
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE):
        base = slug(heading)
        out.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return out


def test_the_slug_follows_github() -> None:
    assert slug("Storm: many nodes' terminate events at once") == "storm-many-nodes-terminate-events-at-once"
    assert slug("Single-node drain against `kubectl drain`") == "single-node-drain-against-kubectl-drain"
    assert (
        slug("Fleet: 50, 100 and 200 nodes, and a model of 1,000") == "fleet-50-100-and-200-nodes-and-a-model-of-1000"
    )


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_a_file_and_a_heading(doc: Path) -> None:
    broken = []
    for target in LINK.findall(FENCE.sub("", doc.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert broken == [], f"{doc.relative_to(ROOT)}: broken links"


# the docs that name the code's files in backticks: `drain/turns.py` (the function's package), `tests/infra/x.py`
# (the repository), or a bare `cordon.py` (some file of the repository's code)
CODE_DOCS = [ROOT / "docs" / "architecture.md", ROOT / "docs" / "benchmarks.md"]
PATH_BASES = [ROOT, ROOT / "lambda_src" / "drain_orchestrator"]
CODE_DIRS = ("lambda_src", "infra", "tests", "bench", "testbed", "build", "events", "examples")
FILE_NAME = re.compile(r"^[\w./-]+\.(?:py|md|yaml|yml|json|toml|ts|mjs|sh)$")
# a path of the repository named in a source's text (a comment, a docstring, a message)
SOURCE_PATH = re.compile(r"\b(?:tests|lambda_src|infra|testbed|bench|build|docs)/[\w/.-]+\.(?:py|md|yaml|json)\b")


def named_files(text: str) -> list[str]:
    """The file paths or names a Markdown text names in backticks (outputs like `.build/...` and patterns left out)."""
    tokens = (t.split("::")[0] for t in re.findall(r"`([^`\s]+)`", text))
    return [t for t in tokens if FILE_NAME.match(t) and not t.startswith(".")]


def test_named_files_reads_paths_and_names_in_backticks() -> None:
    text = "`drain/turns.py`, `tests/infra/test_x.py::test_y`, `cordon.py`, `.build/out.json`, `engine/`, `--json`"
    assert named_files(text) == ["drain/turns.py", "tests/infra/test_x.py", "cordon.py"]


@pytest.mark.parametrize("doc", CODE_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_files_a_doc_names_exist(doc: Path) -> None:
    names = {p.name for d in CODE_DIRS for p in (ROOT / d).rglob("*") if "node_modules" not in p.parts}
    missing = sorted(
        name
        for name in set(named_files(doc.read_text(encoding="utf-8")))
        if not (any((base / name).is_file() for base in PATH_BASES) if "/" in name else name in names)
    )
    assert missing == [], f"{doc.relative_to(ROOT)} names files that do not exist"


def test_the_paths_the_sources_name_exist() -> None:
    sources = [p for d in CODE_DIRS for p in (ROOT / d).rglob("*.py") if "node_modules" not in p.parts]
    here = Path(__file__).resolve()
    missing = sorted(
        f"{src.relative_to(ROOT)}: {path}"
        for src in sources
        if src.resolve() != here
        for path in set(SOURCE_PATH.findall(src.read_text(encoding="utf-8")))
        if not (ROOT / path).exists()
    )
    assert missing == []

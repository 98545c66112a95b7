"""One version everywhere an operator sees it: the function's __version__, both projects' metadata, CHANGELOG.md,
every log line and `status`; `make release` refuses a version that disagrees or has no CHANGELOG entry."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from drain_orchestrator import __version__
from tests.infra.conftest import REPO_ROOT


def _release() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release", REPO_ROOT / "build" / "release.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


release = _release()


def test_the_version_agrees_everywhere_and_has_a_changelog_entry() -> None:
    assert release.check() == __version__
    assert release.SEMVER.fullmatch(__version__)
    entries = release.changelog_entries((REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert __version__ in entries
    assert next(iter(entries)) == __version__  # the newest entry comes first and is this version


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The files the check reads, copied where a test may break them."""
    for rel in ("lambda_src/drain_orchestrator/__init__.py", "pyproject.toml", "infra/pyproject.toml", "CHANGELOG.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / rel, tmp_path / rel)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(
    ("rel", "old", "new", "message"),
    [
        (
            "lambda_src/drain_orchestrator/__init__.py",
            f'"{__version__}"',
            '"1.0"',
            "__version__ = '1.0': expected a semantic version",
        ),
        ("pyproject.toml", f'version = "{__version__}"', 'version = "9.9.9"', "pyproject.toml: [project] version"),
        ("infra/pyproject.toml", 'dynamic = ["version"]', 'version = "9.9.9"', "infra/pyproject.toml: expected dyn"),
        ("CHANGELOG.md", f"## [{__version__}]", "## [0.0.0]", f"CHANGELOG.md: no entry `## [{__version__}]"),
    ],
)
def test_release_check_names_what_disagrees(repo: Path, rel: str, old: str, new: str, message: str) -> None:
    _edit(repo / rel, old, new)
    with pytest.raises(release.ReleaseError) as err:
        release.check(repo)
    assert str(err.value).startswith(message)


def test_every_log_line_carries_the_release() -> None:
    code = (
        "from drain_orchestrator.observability import logger\n"
        "logger.info('one')\n"
        "logger.clear_state()\n"  # what each invocation does first
        "logger.warning('two', extra={'node': 'n1'})\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(REPO_ROOT / "lambda_src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(line["message"], line["release"]) for line in lines] == [("one", __version__), ("two", __version__)]


def test_the_release_zip_is_deterministic(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "b.py").write_text("b = 1\n")
    (tree / "a.py").write_text("a = 1\n")
    (tree / ".complete").write_text("cache marker")
    first, second = tmp_path / "1.zip", tmp_path / "2.zip"
    release.write_zip(tree, first)
    (tree / "a.py").touch()
    release.write_zip(tree, second)
    assert first.read_bytes() == second.read_bytes()
    sums = release.sha256sums([second, first])
    assert [line.split()[1] for line in sums.splitlines()] == ["1.zip", "2.zip"]

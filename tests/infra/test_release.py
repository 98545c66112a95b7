"""One version everywhere an operator sees it: the function's __version__, read by both projects, CHANGELOG.md,
every log line and `status`; `make release` refuses a version that disagrees or has no CHANGELOG entry."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from drain_orchestrator import __version__
from tests.infra.conftest import REPO_ROOT, release_script

release = release_script()


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
        ("pyproject.toml", 'dynamic = ["version"]', 'version = "9.9.9"', "pyproject.toml: expected dynamic"),
        ("pyproject.toml", 'path = "lambda_src/drain_orchestrator/__init__.py"', 'path = "x.py"', "pyproject.toml: [t"),
        ("infra/pyproject.toml", 'dynamic = ["version"]', 'version = "9.9.9"', "infra/pyproject.toml: expected dyn"),
        ("CHANGELOG.md", f"## [{__version__}]", "## [0.0.0]", f"CHANGELOG.md: no entry `## [{__version__}]"),
    ],
)
def test_release_check_names_what_disagrees(repo: Path, rel: str, old: str, new: str, message: str) -> None:
    _edit(repo / rel, old, new)
    with pytest.raises(release.ReleaseError) as err:
        release.check(repo)
    assert str(err.value).startswith(message)


def _git(repo: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin", "HOME": str(repo)}  # fmt: skip
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_a_release_build_needs_a_clean_tree_and_its_tag_nowhere_else(repo: Path) -> None:
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    assert release.check_release(repo) == __version__

    _edit(repo / "CHANGELOG.md", "# Changelog", "# Changelog (edited)")
    with pytest.raises(release.ReleaseError, match=r"^the work tree has changes not committed \(CHANGELOG.md\)"):
        release.check_release(repo)
    _git(repo, "commit", "-q", "-am", "second")
    (repo / "lambda_src" / "drain_orchestrator" / "extra.py").write_text("x = 1\n")  # would go into the wheel
    with pytest.raises(release.ReleaseError, match=r"extra\.py"):
        release.check_release(repo)
    (repo / "lambda_src" / "drain_orchestrator" / "extra.py").unlink()

    _git(repo, "tag", f"v{__version__}", "HEAD~1")  # this version was released from the first commit
    with pytest.raises(release.ReleaseError, match=rf"^tag v{__version__} is on [0-9a-f]{{12}}, not on HEAD"):
        release.check_release(repo)
    _git(repo, "tag", "-f", f"v{__version__}", "HEAD")  # the tag's own commit builds again
    assert release.check_release(repo) == __version__


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

"""`make release`: the artefacts an operator pins, versioned, in dist/.

- ``drain_orchestrator_cdk-<version>-py3-none-any.whl``: the construct (built by the Makefile with ``uv build infra``)
- ``drain_orchestrator-<version>-py3-none-any.whl``: the command line (``uv build`` of the root project)
- ``drain-orchestrator-lambda-<version>.zip``: the Lambda code asset (infra/bundle.py's recipe, arm64), a
  deterministic zip: sorted entries, fixed timestamps, bytecode compiled for /var/task
- ``drain-orchestrator-rbac-<version>.yaml``: infra/k8s/rbac.yaml as released (``drain-orchestrator rbac apply
  --file``, for a command line installed without a checkout), and ``drain-orchestrator-rbac-surge-<version>.yaml``:
  infra/k8s/rbac-surge.yaml, surge before evict's rights, where SURGE_BLOCKED_PODS is not never
- ``SHA256SUMS`` of the five

The version lives in one place, ``lambda_src/drain_orchestrator/__init__.py`` (``__version__``); infra/pyproject.toml
reads it through hatch's dynamic version, and the root pyproject.toml must say the same. Before building anything
this checks that, that the version is a semantic version, and that CHANGELOG.md has an entry for it.

    python build/release.py check          # the checks only
    python build/release.py bundle DIST    # the checks, then the code asset's zip and SHA256SUMS in DIST
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_VERSION_PATH = Path("lambda_src/drain_orchestrator/__init__.py")
# semver 2.0.0 without build metadata (a wheel's version cannot carry it)
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?")
_VERSION_LINE = re.compile(r'^__version__ = "([^"]*)"$', re.MULTILINE)
_ENTRY = re.compile(r"^## \[([^\]]+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)


class ReleaseError(Exception):
    pass


def version(repo: Path = REPO) -> str:
    found = _VERSION_LINE.findall((repo / _VERSION_PATH).read_text(encoding="utf-8"))
    if len(found) != 1:
        raise ReleaseError(f'{_VERSION_PATH}: expected one line `__version__ = "X.Y.Z"`')
    return str(found[0])


def changelog_entries(text: str) -> dict[str, str]:
    """``## [X.Y.Z] - YYYY-MM-DD`` headings: version → date."""
    return {m.group(1): m.group(2) for m in _ENTRY.finditer(text)}


def check(repo: Path = REPO) -> str:
    """The version, after checking it is a semver, agrees across the projects and has a CHANGELOG entry."""
    v = version(repo)
    if not SEMVER.fullmatch(v):
        raise ReleaseError(f"__version__ = {v!r}: expected a semantic version MAJOR.MINOR.PATCH[-PRERELEASE]")
    root = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    if root.get("version") != v:
        raise ReleaseError(f"pyproject.toml: [project] version = {root.get('version')!r}, but __version__ = {v!r}")
    infra = tomllib.loads((repo / "infra" / "pyproject.toml").read_text(encoding="utf-8"))
    source = infra.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
    if "version" not in infra["project"].get("dynamic", []) or not source:
        raise ReleaseError('infra/pyproject.toml: expected dynamic = ["version"] with [tool.hatch.version] path')
    if (repo / "infra" / source).resolve() != (repo / _VERSION_PATH).resolve():
        raise ReleaseError(f"infra/pyproject.toml: [tool.hatch.version] path = {source!r} is not {_VERSION_PATH}")
    changelog = repo / "CHANGELOG.md"
    if v not in changelog_entries(changelog.read_text(encoding="utf-8") if changelog.exists() else ""):
        raise ReleaseError(f"CHANGELOG.md: no entry `## [{v}] - YYYY-MM-DD` for version {v}")
    return v


def write_zip(tree: Path, archive: Path) -> None:
    """A deterministic zip of ``tree``: sorted entries, 1980-01-01 timestamps, mode 0644, deflate level 9."""
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for path in sorted(p for p in tree.rglob("*") if p.is_file() and p.name not in (".complete", ".platform")):
            info = zipfile.ZipInfo(path.relative_to(tree).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes(), compresslevel=9)


def lambda_paths(tree: Path) -> None:
    """Recompile the tree's bytecode as if it had been compiled in /var/task, where Lambda unpacks it: a .pyc
    records its source path, and the bundle compiles in temporary directories, so the zip would differ per build.
    (Compiling writes each .pyc anew: the hard-linked files of the bundle cache are replaced, never modified.)"""
    subprocess.run(
        [
            sys.executable, "-m", "compileall", "-q", "-f", "-j", "0", "--invalidation-mode", "unchecked-hash",
            "-s", str(tree), "-p", "/var/task", str(tree),
        ],
        check=True,
    )  # fmt: skip


def sha256sums(paths: list[Path]) -> str:
    return "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in sorted(paths))


def bundle(dist: Path) -> list[Path]:
    v = check()
    sys.path.insert(0, str(REPO))
    from infra import bundle as recipe  # noqa: PLC0415 - the checks above need no CDK

    dist.mkdir(parents=True, exist_ok=True)
    wheels = [dist / f"drain_orchestrator_cdk-{v}-py3-none-any.whl", dist / f"drain_orchestrator-{v}-py3-none-any.whl"]
    missing = [w.name for w in wheels if not w.is_file()]
    if missing:
        raise ReleaseError(f"{dist}: missing {', '.join(missing)} (build the wheels first: make release)")
    archive = dist / f"drain-orchestrator-lambda-{v}.zip"
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        tree = Path(tmp) / "asset"
        recipe.assemble(tree)
        lambda_paths(tree)
        write_zip(tree, archive)
    rbac = dist / f"drain-orchestrator-rbac-{v}.yaml"
    shutil.copyfile(REPO / "infra" / "k8s" / "rbac.yaml", rbac)
    rbac_surge = dist / f"drain-orchestrator-rbac-surge-{v}.yaml"
    shutil.copyfile(REPO / "infra" / "k8s" / "rbac-surge.yaml", rbac_surge)
    artefacts = [*wheels, archive, rbac, rbac_surge]
    (dist / "SHA256SUMS").write_text(sha256sums(artefacts), encoding="utf-8")
    return artefacts


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["check"] and len(argv) == 1:
            print(check())
            return 0
        if argv[:1] == ["bundle"] and len(argv) == 2:
            for path in bundle(Path(argv[1])):
                print(f"{path}  {path.stat().st_size / 1e6:.1f} MB")
            return 0
    except ReleaseError as exc:
        print(f"release: {exc}", file=sys.stderr)
        return 2
    print("usage: release.py check | bundle DIST", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

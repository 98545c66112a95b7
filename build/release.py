"""`make release`: the artefacts an operator pins, versioned, in dist/.

- ``drain_orchestrator_cdk-<version>-py3-none-any.whl``: the construct (built by the Makefile with ``uv build infra``)
- ``drain_orchestrator-<version>-py3-none-any.whl``: the command line (``uv build`` of the root project)
- ``drain-orchestrator-lambda-<version>.zip``: the Lambda code asset (infra/bundle.py's recipe, arm64), a
  deterministic zip: sorted entries, fixed timestamps, bytecode compiled for /var/task
- ``drain-orchestrator-rbac-<version>.yaml``: infra/k8s/rbac.yaml as released (``drain-orchestrator rbac apply
  --file``, for a command line installed without a checkout), and ``drain-orchestrator-rbac-surge-<version>.yaml``:
  infra/k8s/rbac-surge.yaml, surge before evict's rights, where SURGE_BLOCKED_PODS is not never
- ``drain-orchestrator-<version>.template.json``: the plain CloudFormation template (infra/release_template.py: the
  CDK app's stack with parameters, its code from the zip above in an S3 bucket of yours)
- ``SHA256SUMS`` of them all

The version lives in one place, ``lambda_src/drain_orchestrator/__init__.py`` (``__version__``); both projects
(pyproject.toml, the command line; infra/pyproject.toml, the construct) read it through hatch's dynamic version.
Before building anything this checks that, that the version is a semantic version, and that CHANGELOG.md has an
entry for it; ``--release`` adds what only a build to hand out needs: a clean work tree (every artefact is the
commit's, nothing else) and no tag ``vX.Y.Z`` on another commit (a released version is never built again from
different code).

    python build/release.py check [--release]   # the checks only
    python build/release.py bundle DIST         # the code asset's zip and SHA256SUMS in DIST (after check)
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

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
    for project in (Path("pyproject.toml"), Path("infra/pyproject.toml")):
        _reads_the_version(repo, project)
    changelog = repo / "CHANGELOG.md"
    if v not in changelog_entries(changelog.read_text(encoding="utf-8") if changelog.exists() else ""):
        raise ReleaseError(f"CHANGELOG.md: no entry `## [{v}] - YYYY-MM-DD` for version {v}")
    return v


def _reads_the_version(repo: Path, project: Path) -> None:
    """The project's version is hatch's dynamic version read from __version__, never written in the project."""
    meta = tomllib.loads((repo / project).read_text(encoding="utf-8"))
    source = meta.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
    if "version" in meta["project"] or "version" not in meta["project"].get("dynamic", []) or not source:
        raise ReleaseError(f'{project}: expected dynamic = ["version"] with [tool.hatch.version] path, no version')
    if (repo / project.parent / source).resolve() != (repo / _VERSION_PATH).resolve():
        raise ReleaseError(f"{project}: [tool.hatch.version] path = {source!r} is not {_VERSION_PATH}")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def check_release(repo: Path = REPO) -> str:
    """check(), and what a build to hand out needs: a clean work tree, the version's tag (if any) on HEAD."""
    v = check(repo)
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=normal").splitlines()
    if dirty:
        shown = ", ".join(line[3:] for line in dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise ReleaseError(f"the work tree has changes not committed ({shown}): commit or stash them first")
    tag = f"v{v}"
    if _git(repo, "tag", "--list", tag).strip():
        tagged, head = (_git(repo, "rev-parse", ref).strip() for ref in (f"refs/tags/{tag}^{{commit}}", "HEAD"))
        if tagged != head:
            raise ReleaseError(
                f"tag {tag} is on {tagged[:12]}, not on HEAD {head[:12]}: version {v} was released from other code; "
                "give this build a new version (and its CHANGELOG entry)"
            )
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


def lambda_zip(archive: Path, wheel_platform: str) -> None:
    """The Lambda code asset as released, with the dependencies' wheels for ``wheel_platform`` (Lambda's arm64 in a
    release; this machine's for the test that runs the zip: tests/integration/test_release_stack.py)."""
    sys.path.insert(0, str(REPO))
    from infra import bundle as recipe  # noqa: PLC0415 - the checks need no CDK

    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        tree = Path(tmp) / "asset"
        recipe.assemble(tree, wheel_platform)
        lambda_paths(tree)
        write_zip(tree, archive)


def bundle(dist: Path, *, template: dict[str, Any] | None = None) -> list[Path]:
    """The artefacts beside the wheels already in ``dist``, and SHA256SUMS of them all. ``template``: the release
    template already built by infra/release_template.py for this version (its ~20 synths are the slow part: a test
    shares one build), else built here."""
    v = check()
    sys.path.insert(0, str(REPO))
    from infra import bundle as recipe  # noqa: PLC0415 - the checks above need no CDK

    dist.mkdir(parents=True, exist_ok=True)
    wheels = [dist / f"drain_orchestrator_cdk-{v}-py3-none-any.whl", dist / f"drain_orchestrator-{v}-py3-none-any.whl"]
    missing = [w.name for w in wheels if not w.is_file()]
    if missing:
        raise ReleaseError(f"{dist}: missing {', '.join(missing)} (build the wheels first: make release)")
    archive = dist / f"drain-orchestrator-lambda-{v}.zip"
    lambda_zip(archive, recipe.PLATFORM)
    rbac = dist / f"drain-orchestrator-rbac-{v}.yaml"
    shutil.copyfile(REPO / "infra" / "k8s" / "rbac.yaml", rbac)
    from infra import release_template  # noqa: PLC0415 - needs jsii (Node from node_modules: the Makefile's PATH)

    if template is None:
        with tempfile.TemporaryDirectory(prefix="release-template-") as tmp:
            template = release_template.build(v, Path(tmp))
    if template["Parameters"][release_template.CODE_KEY]["Default"] != archive.name:
        raise ReleaseError(f"the template's {release_template.CODE_KEY} default is not {archive.name}")
    template_file = dist / f"drain-orchestrator-{v}.template.json"
    template_file.write_text(json.dumps(template, indent=1) + "\n", encoding="utf-8")
    rbac_surge = dist / f"drain-orchestrator-rbac-surge-{v}.yaml"
    shutil.copyfile(REPO / "infra" / "k8s" / "rbac-surge.yaml", rbac_surge)
    artefacts = [*wheels, archive, rbac, rbac_surge, template_file]
    (dist / "SHA256SUMS").write_text(sha256sums(artefacts), encoding="utf-8")
    return artefacts


def main(argv: list[str]) -> int:
    try:
        if argv in (["check"], ["check", "--release"]):
            print(check_release() if "--release" in argv else check())
            return 0
        if argv[:1] == ["bundle"] and len(argv) == 2:
            for path in bundle(Path(argv[1])):
                print(f"{path}  {path.stat().st_size / 1e6:.1f} MB")
            return 0
    except ReleaseError as exc:
        print(f"release: {exc}", file=sys.stderr)
        return 2
    print("usage: release.py check [--release] | bundle DIST", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

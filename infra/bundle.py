"""Build the Lambda bundle locally, without Docker: aarch64 wheels from the uv lock plus our package.

Deterministic by construction: the runtime set comes from `uv.lock` with hashes, wheels are unpacked,
bytecode is compiled by Python 3.13 in unchecked-hash mode (no timestamps), and the CDK asset hash
(`bundle_key`) is derived only from the inputs (lock, pyproject, package sources and this module's recipe).
The pruned third-party tree is cached outside cdk.out, keyed by `dependencies_key`, so a synth after a code
change or after `cdk.out` was deleted does not reinstall.

`python -m infra.bundle [--check-imports]` assembles the bundle and prints its unzipped and zipped sizes.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

# Where the function's sources and lock are: this repository, or - in the installed package drain_orchestrator_cdk
# (infra/pyproject.toml) - the copy of lambda_src/, pyproject.toml and uv.lock shipped inside it as `lambda_app/`.
# DRAIN_ORCHESTRATOR_APP_ROOT points at another checkout (a directory holding those three).
APP_ROOT_VARIABLE = "DRAIN_ORCHESTRATOR_APP_ROOT"
CACHE_VARIABLE = "DRAIN_ORCHESTRATOR_BUNDLE_CACHE"
PACKAGED_APP = "lambda_app"


def _app_root() -> Path:
    override = os.environ.get(APP_ROOT_VARIABLE)
    if override:
        root = Path(override).resolve()
        if not (root / "uv.lock").is_file() or not (root / "lambda_src").is_dir():
            raise RuntimeError(f"{APP_ROOT_VARIABLE}={override}: expected a directory with uv.lock and lambda_src/")
        return root
    here = Path(__file__).resolve().parent
    packaged = here / PACKAGED_APP
    return packaged if (packaged / "uv.lock").is_file() else here.parent


REPO_ROOT = _app_root()
SOURCE_ROOT = REPO_ROOT / "lambda_src"
PACKAGE_NAME = "drain_orchestrator"
# The pruned dependency tree (~70 MB): in the checkout's .build/, or per user when installed from a wheel.
_DEFAULT_CACHE = (
    Path.home() / ".cache" / "drain-orchestrator-cdk" / "lambda-bundle"
    if REPO_ROOT.name == PACKAGED_APP
    else REPO_ROOT / ".build" / "lambda-bundle"
)
CACHE_ROOT = Path(os.environ.get(CACHE_VARIABLE) or _DEFAULT_CACHE)

# The Kubernetes manifests the product applies (infra/k8s/; package data of the construct's wheel), shipped in the
# asset as drain_orchestrator/k8s/ for the stack's RBAC resource (drain_orchestrator/rbac_resource.py)
MANIFEST_DIR = Path(__file__).resolve().parent / "k8s"

PYTHON_VERSION = "3.13"
PLATFORM = "aarch64-manylinux2014"  # Lambda arm64 (Graviton), glibc 2.17+ wheels

# Distributions of the project left out of the function, with every dependency only they need (`uv export
# --prune`): `kubernetes` is the command line's fallback for kubeconfigs whose user runs an exec plugin; the function
# reaches its clusters over urllib3 (kube/client.py). `unpruned_imports` proves nothing left imports them.
PRUNED_PACKAGES = ("kubernetes",)
# Paths inside the bundle removed after install, with why each is safe.
PRUNED_PATHS = ("bin",)  # console scripts (jp.py, ...): not callable in Lambda
PRUNED_GLOBS = ("**/__pycache__",)
# botocore ships the API models of ~450 services (28 MB of already-compressed files, most of the zip). The
# function creates clients for these only (aws/clients.py, aws/sns.py, the shared-reads table's "dynamodb", and
# the durable SDK's "lambda" client); sso/sso-oidc back botocore's own credential providers.
# tests/infra/test_synth_cli.py creates every one of them from the bundle's botocore, and tests/infra/test_bundle.py
# checks every service the code names is listed, so a missing model fails the build, not a drain.
BOTOCORE_SERVICES = ("autoscaling", "dynamodb", "ec2", "eks", "elbv2", "lambda", "sns", "sso", "sso-oidc", "sts")

# Bump when the recipe changes in a way the inputs below do not capture.
RECIPE_VERSION = "4"


def _manifests() -> list[Path]:
    return sorted(MANIFEST_DIR.glob("*.yaml"))


def manifests_digest() -> str:
    """SHA-256 of the shipped manifests (names and contents): what the stack's RBAC resources carry, so a release
    that changes any of them updates those resources."""
    digest = _Digest()
    for path in _manifests():
        digest.feed(path.name, path.read_bytes())
    return digest.hexdigest()


def _source_files() -> list[Path]:
    package = SOURCE_ROOT / PACKAGE_NAME
    return sorted(
        path
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    )


class _Digest:
    def __init__(self) -> None:
        self._sha = hashlib.sha256()

    def feed(self, label: str, data: bytes) -> None:
        self._sha.update(f"{label}\0{len(data)}\0".encode())
        self._sha.update(data)

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def host_platform() -> str:
    """This machine's wheel platform, for running the bundle here (testbed/runtime.py)."""
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if arch not in ("x86_64", "aarch64"):
        raise RuntimeError(f"no Lambda architecture matches this machine ({machine}); Lambda runs x86_64 or arm64")
    return f"{arch}-manylinux2014"


def dependencies_key(wheel_platform: str = PLATFORM) -> str:
    """Hash of what decides the third-party part: the lock, pyproject and the install/prune recipe."""
    digest = _Digest()
    recipe = "|".join(
        (RECIPE_VERSION, PYTHON_VERSION, wheel_platform, *PRUNED_PACKAGES, *PRUNED_PATHS, *PRUNED_GLOBS,
         *BOTOCORE_SERVICES)
    )  # fmt: skip
    digest.feed("recipe", recipe.encode())
    digest.feed("uv.lock", (REPO_ROOT / "uv.lock").read_bytes())
    digest.feed("pyproject.toml", (REPO_ROOT / "pyproject.toml").read_bytes())
    return digest.hexdigest()


def bundle_key() -> str:
    """Hash of every input of the bundle (dependencies + our sources); the CDK asset hash."""
    digest = _Digest()
    digest.feed("dependencies", dependencies_key().encode())
    for path in _source_files():
        digest.feed(path.relative_to(SOURCE_ROOT).as_posix(), path.read_bytes())
    for path in _manifests():
        digest.feed(f"k8s/{path.name}", path.read_bytes())
    return digest.hexdigest()


def _run(cmd: list[str]) -> None:
    result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"bundling step failed: {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")


def _uv() -> str:
    """`$UV` if set, else the pinned uv installed beside the running interpreter (`.venv/bin/uv`, from the
    `infra` dependency group, so `make setup` alone is enough for `npx cdk synth`), else `uv` on PATH."""
    pinned = Path(sysconfig.get_path("scripts")) / "uv"
    uv = os.environ.get("UV") or (str(pinned) if pinned.is_file() else None) or shutil.which("uv")
    if not uv:
        raise RuntimeError(
            "bundling needs uv (it exports the runtime requirements from uv.lock): run `make setup` (installs the "
            "pinned uv into .venv), put uv on PATH or set UV"
        )
    return uv


def export_requirements(requirements: Path) -> None:
    """The function's runtime set from uv.lock, with hashes: the project's dependencies less PRUNED_PACKAGES."""
    _run(
        [
            _uv(), "export", "--frozen", "--no-dev", "--no-default-groups", "--no-emit-project",
            *(arg for package in PRUNED_PACKAGES for arg in ("--prune", package)),
            "--format", "requirements-txt", "--output-file", str(requirements),
        ]
    )  # fmt: skip


def _install_dependencies(target: Path, work: Path, wheel_platform: str) -> None:
    requirements = work / "requirements.txt"
    export_requirements(requirements)
    _run(
        [
            _uv(), "pip", "install", "--quiet", "--no-config", "--target", str(target),
            "--python-platform", wheel_platform, "--python-version", PYTHON_VERSION,
            "--only-binary", ":all:", "--no-deps", "--require-hashes", "--no-compile",
            "--link-mode", "copy", "-r", str(requirements),
        ]
    )  # fmt: skip


def _prune(target: Path) -> None:
    for rel in PRUNED_PATHS:
        shutil.rmtree(target / rel, ignore_errors=True)
    for pattern in PRUNED_GLOBS:
        for path in sorted(target.glob(pattern), reverse=True):
            shutil.rmtree(path, ignore_errors=True)
    data = target / "botocore" / "data"
    for service in sorted(p for p in data.iterdir() if p.is_dir()):
        if service.name not in BOTOCORE_SERVICES:
            shutil.rmtree(service)


PYTHON_VARIABLE = "DRAIN_ORCHESTRATOR_PYTHON313"


def _is_runtime_python(candidate: str) -> bool:
    check = f"import sys; assert sys.version_info[:2] == ({PYTHON_VERSION.replace('.', ', ')})"
    try:
        return subprocess.run([candidate, "-c", check], capture_output=True, timeout=30, check=False).returncode == 0
    except OSError:
        return False


def bytecode_python() -> str:
    """The Python that compiles the bundle's bytecode: the Lambda runtime's version, which a CDK app on another
    version (3.12) finds like the Makefile does: $DRAIN_ORCHESTRATOR_PYTHON313, `python3.13` on PATH, pyenv, uv."""
    if sys.version_info[:2] == tuple(int(x) for x in PYTHON_VERSION.split(".")):
        return sys.executable
    candidates = [os.environ.get(PYTHON_VARIABLE), shutil.which(f"python{PYTHON_VERSION}")]
    candidates += sorted(
        str(p) for p in Path.home().glob(f".pyenv/versions/{PYTHON_VERSION}*/bin/python{PYTHON_VERSION}")
    )
    try:
        found = subprocess.run(
            [_uv(), "python", "find", PYTHON_VERSION], capture_output=True, text=True, timeout=60, check=False
        )
        candidates.append(found.stdout.strip() if found.returncode == 0 else None)
    except (OSError, RuntimeError, subprocess.TimeoutExpired):
        pass
    for candidate in candidates:
        if candidate and _is_runtime_python(candidate):
            return candidate
    raise RuntimeError(
        f"bytecode must be compiled by Python {PYTHON_VERSION} (the Lambda runtime), and this CDK app runs on "
        f"{sys.version.split()[0]}: install Python {PYTHON_VERSION} (python{PYTHON_VERSION} on PATH, pyenv or "
        f"`uv python install {PYTHON_VERSION}`) or point {PYTHON_VARIABLE} at one"
    )


def compile_bytecode(tree: Path) -> None:
    """Ship bytecode: Lambda's /var/task is read-only, so without .pyc files every cold start would compile
    every module it imports (measured here: 1.6 s instead of 0.56 s for the handler's imports).
    unchecked-hash pycs carry no timestamps (reproducible) and are never revalidated against the sources."""
    python = bytecode_python()
    _run([python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(tree)])


def cached_dependencies(wheel_platform: str = PLATFORM) -> Path:
    """The pruned third-party tree for the current lock, installed once and reused by every synth.

    Our own package is not part of it, so editing the code costs a copy, not a reinstall.
    """
    key = dependencies_key(wheel_platform)
    final = CACHE_ROOT / key
    if (final / ".complete").exists():
        return final
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{key[:12]}-", dir=CACHE_ROOT))
    try:
        tree = staging / "tree"
        with tempfile.TemporaryDirectory(prefix="bundle-reqs-") as work:
            _install_dependencies(tree, Path(work), wheel_platform)
        _prune(tree)
        compile_bytecode(tree)
        (tree / ".platform").write_text(wheel_platform)
        (tree / ".complete").write_text(key)
        try:
            tree.rename(final)
        except OSError:
            if not (final / ".complete").exists():  # lost a race to a concurrent synth: theirs is as good
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _drop_stale(keep=key, wheel_platform=wheel_platform)
    return final


def _drop_stale(keep: str, wheel_platform: str) -> None:
    """Keep the cache to the current dependency set per platform: each one is ~70 MB."""
    for entry in CACHE_ROOT.iterdir():
        if entry.name == keep or len(entry.name) != 64 or not entry.is_dir():
            continue
        marker = entry / ".platform"
        if (marker.read_text() if marker.exists() else PLATFORM) == wheel_platform:
            shutil.rmtree(entry, ignore_errors=True)


def assemble(output_dir: Path, wheel_platform: str = PLATFORM) -> None:
    """Fill `output_dir` (CDK's bundling output) with dependencies and our package.

    Dependencies are hard-linked where possible: the cache is never modified in place, and linking ~70 MB
    is far cheaper than copying it.
    """

    def link_or_copy(src: str, dst: str) -> object:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(
        cached_dependencies(wheel_platform),
        output_dir,
        dirs_exist_ok=True,
        copy_function=link_or_copy,
        ignore=shutil.ignore_patterns(".complete", ".platform"),
    )
    shutil.copytree(
        SOURCE_ROOT / PACKAGE_NAME,
        output_dir / PACKAGE_NAME,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"),
    )
    (output_dir / PACKAGE_NAME / "k8s").mkdir(exist_ok=True)
    for path in _manifests():
        shutil.copyfile(path, output_dir / PACKAGE_NAME / "k8s" / path.name)
    compile_bytecode(output_dir / PACKAGE_NAME)


def zip_size(tree: Path) -> int:
    """Size of a deterministic zip of `tree` (sorted entries, fixed timestamps, deflate level 9)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "bundle.zip"
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            for path in sorted(p for p in tree.rglob("*") if p.is_file() and p.name not in (".complete", ".platform")):
                info = zipfile.ZipInfo(path.relative_to(tree).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, path.read_bytes(), compresslevel=9)
        return archive.stat().st_size


def tree_size(tree: Path) -> int:
    return sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())


def unpruned_imports(tree: Path) -> list[str]:
    """Module-level imports that would fail in the bundle (must be empty): of a pruned package anywhere, and of
    anything neither in the bundle nor in the standard library from our own package.

    Imports inside functions are allowed: they only run when called (the command line's fallback to the kubernetes
    client, its YAML reader). Module-level ones, including under `if`/`try`, run at import time. Third-party code is
    only checked for the pruned packages: its optional imports (`try: import x except ImportError`) are its own.
    """
    present = {path.name.split(".")[0] for path in tree.iterdir()} | set(sys.stdlib_module_names) | {"__future__"}
    needles = [name.encode() for name in PRUNED_PACKAGES]
    offenders: list[str] = []
    for path in sorted(tree.rglob("*.py")):
        rel = path.relative_to(tree).as_posix()
        ours = rel.startswith(f"{PACKAGE_NAME}/")
        data = path.read_bytes()
        if not ours and not any(needle in data for needle in needles):
            continue
        for module in _module_level_imports(ast.parse(data, filename=rel), rel):
            top = module.split(".")[0]
            if top in PRUNED_PACKAGES or (ours and top not in present):
                offenders.append(f"{rel}: {module}")
    return offenders


def _module_level_imports(tree: ast.Module, rel: str) -> list[str]:
    # The package a relative import starts from: the file's directory, for modules and __init__ alike.
    package = rel.split("/")[:-1]
    found: list[str] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = ".".join(package[: len(package) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found.append(base)
            found.extend(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)  # the body runs under a type checker only
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    pending.append(child)
                elif isinstance(child, ast.ExceptHandler):
                    pending.extend(child.body)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check-imports", action="store_true", help="fail if pruned modules are imported")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bundle-") as tmp:
        tree = Path(tmp) / "asset"
        assemble(tree)
        print(f"bundle {bundle_key()[:16]} (dependencies {dependencies_key()[:16]})")
        print(f"unzipped: {tree_size(tree) / 1e6:.1f} MB")
        print(f"zipped:   {zip_size(tree) / 1e6:.1f} MB (deflate level 9)")
        if args.check_imports:
            offenders = unpruned_imports(tree)
            for offender in offenders:
                print(f"pruned module imported: {offender}", file=sys.stderr)
            print(f"module-level imports of pruned modules: {len(offenders)}")
            return 1 if offenders else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

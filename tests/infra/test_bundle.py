"""The Docker-free bundle recipe: asset hash from inputs only, pruning safety check, deterministic zip."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from infra.construct import KUBERNETES_GROUP

from infra import bundle


@pytest.fixture
def fake_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of lambda_src the test may edit; bundle_key reads it instead of the real one."""
    root = tmp_path / "lambda_src"
    package = root / bundle.PACKAGE_NAME
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""pkg"""\n')
    (package / "handler.py").write_text("def handler(event, context):\n    return None\n")
    monkeypatch.setattr(bundle, "SOURCE_ROOT", root)
    return package


def test_bundle_key_depends_on_sources_only(fake_sources: Path) -> None:
    first = bundle.bundle_key()
    assert bundle.bundle_key() == first  # stable

    cache = fake_sources / "__pycache__"
    cache.mkdir()
    (cache / "handler.cpython-313.pyc").write_bytes(b"\0junk")
    (fake_sources / "handler.py").touch()  # mtime changes only
    assert bundle.bundle_key() == first  # bytecode and timestamps are not inputs

    (fake_sources / "handler.py").write_text("def handler(event, context):\n    return 1\n")
    assert bundle.bundle_key() != first

    (fake_sources / "handler.py").write_text("def handler(event, context):\n    return None\n")
    assert bundle.bundle_key() == first
    (fake_sources / "new.py").write_text("")
    assert bundle.bundle_key() != first  # a new (even empty) module counts


def test_bundle_key_changes_with_the_recipe(fake_sources: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = bundle.bundle_key()
    monkeypatch.setattr(bundle, "PRUNED_PATHS", (*bundle.PRUNED_PATHS, "yaml"))
    assert bundle.bundle_key() != first


def test_unpruned_imports_flags_module_level_use_only(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()  # third-party: its optional imports are its own, a pruned package's are not
    (tmp_path / "lib" / "__init__.py").write_text("try:\n    import yarl\nexcept ImportError:\n    pass\n")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "__init__.py").write_text("try:\n    import kubernetes.client\nexcept ImportError:\n    pass\n")
    package = tmp_path / bundle.PACKAGE_NAME
    package.mkdir()
    (package / "__init__.py").write_text("from __future__ import annotations\nimport json\nimport lib\n")
    (package / "lazy.py").write_text("def load():\n    import yaml\n    return yaml\n")  # only when called
    (package / "typed.py").write_text("import typing\nif typing.TYPE_CHECKING:\n    import mypy_boto3_ec2\n")
    (package / "eager.py").write_text("from . import lazy\nimport yaml\n")
    assert bundle.unpruned_imports(tmp_path) == [
        "bad/__init__.py: kubernetes.client",
        f"{bundle.PACKAGE_NAME}/eager.py: yaml",
    ]


def test_the_function_is_bundled_without_the_kubernetes_client(tmp_path: Path) -> None:
    """The project keeps `kubernetes` (the command line's fallback for exec plugins); the function's set does not."""
    declared = tomllib.loads((bundle.REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("kubernetes==") for d in declared)
    bundle.export_requirements(tmp_path / "requirements.txt")
    lines = (tmp_path / "requirements.txt").read_text().splitlines()
    exported = {line.split("==")[0] for line in lines if "==" in line and not line.lstrip().startswith("#")}
    assert {"boto3", "botocore", "urllib3", "aws-durable-execution-sdk-python"} <= exported
    assert not exported & {"kubernetes", "requests", "pyyaml", "websocket-client", "aiohttp"}


def test_zip_is_deterministic(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("x = 1\n" * 1000)
    (tree / "b.txt").write_text("hello")
    first = bundle.zip_size(tree)
    copy = tmp_path / "copy"
    shutil.copytree(tree, copy)  # other mtimes, other inode order
    assert bundle.zip_size(copy) == first
    assert first < bundle.tree_size(tree)


@pytest.mark.parametrize("manifest", ["rbac.yaml", "rbac-surge.yaml"])
def test_shipped_rbac_binds_the_access_entry_group(manifest: str) -> None:
    """The access entry's kubernetesGroups must be the subject both shipped manifests bind."""
    documents = list(yaml.safe_load_all((bundle.REPO_ROOT / "infra" / "k8s" / manifest).read_text()))
    binding = next(d for d in documents if d["kind"] == "ClusterRoleBinding")
    role = next(d for d in documents if d["kind"] == "ClusterRole")
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": KUBERNETES_GROUP}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    if manifest == "rbac.yaml":
        evict = [r for r in role["rules"] if "pods/eviction" in r["resources"]]
        assert evict and evict[0]["verbs"] == ["create"]


def test_bundler_finds_the_pinned_uv_without_path_or_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """`make setup` puts uv into .venv (infra group); the bundler must not need it on PATH or in $UV."""
    monkeypatch.delenv("UV", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    uv = Path(bundle._uv())
    assert uv.parent == Path(sys.executable).parent
    version = subprocess.run([str(uv), "--version"], capture_output=True, text=True, check=True).stdout
    locked = tomllib.loads((bundle.REPO_ROOT / "pyproject.toml").read_text())["dependency-groups"]["infra"]
    assert f"uv=={version.split()[1]}" in locked


def _services_named_in(package: Path) -> set[str]:
    """Service names the function's AWS adapters pass to their client factory (aws/clients.py `_client`)."""
    named = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if func == "_client" and isinstance(node.args[0].value, str):
                named.add(node.args[0].value)
    return named


def test_every_aws_service_the_function_calls_keeps_its_botocore_model() -> None:
    named = _services_named_in(bundle.REPO_ROOT / "lambda_src" / "drain_orchestrator" / "aws")
    assert {"ec2", "autoscaling", "eks", "sts", "sns", "elbv2"} <= named  # the scan sees the adapters
    assert named - set(bundle.BOTOCORE_SERVICES) == set(), "add to infra/bundle.py BOTOCORE_SERVICES"

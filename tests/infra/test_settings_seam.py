"""The seam between the function and its construct at `cdk synth` (drain_orchestrator/settings_seam.py): the
construct loads exactly the modules the seam lists, and each of them imports only the standard library and the
modules listed before it, so that loading them needs neither the rest of the function nor its dependencies."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from drain_orchestrator import settings_seam
from drain_orchestrator.settings_seam import SYNTH_MODULES
from infra import function_settings

PACKAGE = Path(settings_seam.__file__).parent


def _imports(module: str) -> set[str]:
    """Every module ``module`` imports, at its top or inside functions (not those only the type checker reads)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_the_construct_loads_exactly_the_modules_the_seam_lists() -> None:
    assert function_settings.synth_modules() == ("settings_seam", *SYNTH_MODULES)
    assert function_settings.loaded_from() == str(PACKAGE)


def _allowed(name: str, before: tuple[str, ...]) -> bool:
    if name == "__future__" or name.partition(".")[0] in sys.stdlib_module_names or name == "drain_orchestrator":
        return True
    return any(name == f"drain_orchestrator.{m}" or name.startswith(f"drain_orchestrator.{m}.") for m in before)


@pytest.mark.parametrize("position", range(len(SYNTH_MODULES)))
def test_each_module_of_the_seam_imports_only_the_stdlib_and_the_modules_before_it(position: int) -> None:
    module, before = SYNTH_MODULES[position], SYNTH_MODULES[:position]
    foreign = sorted(name for name in _imports(module) if not _allowed(name, before))
    assert foreign == [], f"{module} imports {foreign}: the construct could not load it at synth"


@pytest.mark.parametrize("module", SYNTH_MODULES)
def test_each_module_of_the_seam_says_so(module: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / f"{module}.py").read_text())) or ""
    assert "settings_seam.py" in doc, f"{module}.py does not say that the construct loads it at synth"


def test_a_module_of_the_seam_that_imports_more_fails_the_synth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "drain_orchestrator"
    copy.mkdir()
    for name in ("settings_seam", *SYNTH_MODULES):
        (copy / f"{name}.py").write_text((PACKAGE / f"{name}.py").read_text())
    clip = copy / "clip.py"
    clip.write_text(clip.read_text() + "\nfrom drain_orchestrator.kube import rest\n")
    monkeypatch.setattr(function_settings, "SOURCE_ROOT", tmp_path)
    function_settings._validators.cache_clear()
    try:
        with pytest.raises(function_settings.ImpureSettingsModule, match=r"drain_orchestrator\.clip imports"):
            function_settings.synth_modules()
    finally:
        function_settings._validators.cache_clear()

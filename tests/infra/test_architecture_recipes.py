"""docs/architecture.md's "How to add" lists, checked against the code so that they cannot drift.

Each list is derived from what exists: the code files (function and construct) that name every event kind, every
kind's action setting, every gate, every drain setting. A new kind, gate or setting is wired the way the existing ones
are, so those are the files it touches; a list that names a file the code does not need, or misses one it does,
fails here."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from infra.validation import WORKFLOW_VARIABLES

from drain_orchestrator.kinds import KINDS
from drain_orchestrator.workflow.gate_defs import GATES

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "lambda_src" / "drain_orchestrator"
DOC = REPO / "docs" / "architecture.md"
CODE = {
    **{f"infra/{p.relative_to(REPO / 'infra')}": p.read_text() for p in (REPO / "infra").rglob("*.py")},
    **{str(p.relative_to(PACKAGE)): p.read_text() for p in PACKAGE.rglob("*.py")},
}


def _naming_all(groups: Iterable[Iterable[str]]) -> set[str]:
    """The code files that name, for every group, at least one of its identifiers (as a whole word)."""
    patterns = [[re.compile(rf"(?<![\w]){re.escape(i)}(?![\w])") for i in g] for g in groups]
    return {f for f, text in CODE.items() if all(any(p.search(text) for p in g) for g in patterns)}


def _kind_files() -> set[str]:
    return _naming_all([f'"{kind}"'] for kind in KINDS)


def _action_files() -> set[str]:
    """The forms a kind's action setting takes: its variable, the function's field, the construct's context key,
    its KindActions field."""

    def forms(variable: str) -> list[str]:
        field = variable.removeprefix("ACTION_").lower()
        camel = "action" + "".join(w.capitalize() for w in field.split("_"))
        return [variable, f"action_{field}", camel, f"actions.{field}", f'"{field}"']

    actions = [rule.action_variable for rule in KINDS.values() if rule.action_variable]
    assert len(actions) >= 2
    return _naming_all(forms(v) for v in actions) - _kind_files()


def _gate_files() -> set[str]:
    """A gate is named by its key, its setting and its variable, and by the durable steps and checkpoint types its
    classes in gate_defs.py use."""
    tree = ast.parse(CODE["workflow/gate_defs.py"])
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    steps = {n.name for n in ast.parse(CODE["workflow/gate_steps.py"]).body if isinstance(n, ast.FunctionDef)}
    results = {n.name for n in ast.parse(CODE["workflow/results.py"]).body if isinstance(n, ast.ClassDef)}

    def used(name: str) -> set[str]:
        names = {n.id for n in ast.walk(classes[name]) if isinstance(n, ast.Name)}
        return names | {m for n in names & classes.keys() if n != name for m in used(n)}

    found = [used(type(gate).__name__) & (steps | results) for gate in GATES]
    shared = {name for i, names in enumerate(found) for other in found[i + 1 :] for name in names & other}
    groups = []
    for gate, names in zip(GATES, found, strict=True):
        own = names - shared  # what every gate uses (StepFault) is the gates' machinery, not one gate's
        assert own, f"no step or checkpoint type of its own found for gate {gate.key}"
        groups.append([gate.key, gate.setting, gate.setting.upper(), *own])
    return _naming_all(groups)


def _setting_files() -> set[str]:
    return _naming_all([v] for v in WORKFLOW_VARIABLES)


def _recipes() -> dict[str, tuple[int, list[str]]]:
    """Each recipe of the doc: its title, the count it states, the files its numbered items name."""
    text = DOC.read_text().split("## How to add", 1)[1].split("\n## ", 1)[0]
    out: dict[str, tuple[int, list[str]]] = {}
    for block in re.split(r"\n(?=\*\*)", text)[1:]:
        title = re.match(r"\*\*(.+?)\*\* \((\d+)(?: more)? code files", block)
        assert title is not None, f"a recipe without '(N code files)': {block[:60]!r}"
        items = re.findall(r"^\d+\. `([^`]+)`", block, flags=re.MULTILINE)
        out[title.group(1)] = (int(title.group(2)), items)
    return out


RECIPES = {
    "An event kind": _kind_files,
    "With an action setting of its own": _action_files,
    "A gate": _gate_files,
    "A drain setting": _setting_files,
}


def test_the_doc_has_every_recipe() -> None:
    assert set(_recipes()) == set(RECIPES)


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_recipes_files_are_those_the_code_needs(recipe: str) -> None:
    count, listed = _recipes()[recipe]
    assert count == len(listed), f"{recipe}: says {count} code files, lists {len(listed)}"
    assert set(listed) == RECIPES[recipe](), recipe


def test_the_derivation_finds_the_files_of_a_kind_that_is_wired_like_the_others() -> None:
    assert _kind_files() == {"interruption.py", "kinds.py", "events.py", "infra/event_rules.py"}
    assert "settings.py" in _action_files() and "kinds.py" not in _action_files()

"""docs/notifications.md describes every notification the code can send: each phase `notify()` is called with
(found by reading the source, with the final phases from outcome.RULES), the fields each phase adds, the results
each final phase carries and the reasons a pod is held. Whether the examples match what the function really
publishes is checked on the bed (tests/integration/test_notification_format.py and the held and approval tests)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from drain_orchestrator.drain.policy import Hold
from drain_orchestrator.kube.evict import HoldReason
from drain_orchestrator.outcome import RULES, InstanceOutcome
from drain_orchestrator.timefmt import deadline_fields
from drain_orchestrator.workflow.held import Held

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "lambda_src" / "drain_orchestrator"
DOC = ROOT / "docs" / "notifications.md"
FINAL = {rule.notification for rule in RULES.values() if rule.notification is not None}


def _phases_sent() -> tuple[set[str], list[str]]:
    """The phases of every `notify(phase, ...)` call: a literal, or a name the calling function assigns from a
    result's rule (`said = rule(result).notification`), which can be any of RULES' notifications. Anything else is
    returned as unresolved."""
    phases: set[str] = set()
    unresolved = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            from_rules = {
                target.id
                for node in ast.walk(function)
                if isinstance(node, ast.Assign) and ".notification" in ast.unparse(node.value)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
            for call in ast.walk(function):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "notify"):
                    continue
                phase = call.args[0] if call.args else None
                if isinstance(phase, ast.Constant) and isinstance(phase.value, str):
                    phases.add(phase.value)
                elif isinstance(phase, ast.Name) and phase.id in from_rules:
                    phases |= FINAL
                else:
                    where = f"{path.relative_to(SRC)}:{call.lineno}"
                    unresolved.append(f"{where}: {ast.unparse(phase) if phase else '?'}")
    return phases, unresolved


def _common_fields() -> set[str]:
    """The keys of the message `workflow/notify.py` builds for every phase."""
    tree = ast.parse((SRC / "workflow" / "notify.py").read_text(encoding="utf-8"))
    (message,) = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "message" for t in node.targets)
        and isinstance(node.value, ast.Dict)
    ]
    assert isinstance(message, ast.Dict)
    return {k.value for k in message.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _documented_fields() -> dict[str, set[str]]:
    """Per `<!-- fields: PHASE... -->` marker, the fields of the table under it (its first column)."""
    out: dict[str, set[str]] = {}
    for names, table in re.findall(r"<!-- fields: ([\w -]+) -->\n((?:\|.*\n)+)", _doc()):
        fields = set(re.findall(r"^\| `(\w+)` \|", table, flags=re.MULTILINE))
        for name in names.split():
            out[name] = fields
    return out


def _examples() -> dict[str, dict[str, object]]:
    blocks = re.findall(r"<!-- example: ([\w-]+) -->\n```json\n(.*?)\n```", _doc(), flags=re.DOTALL)
    return {name: json.loads(body) for name, body in blocks}


def _type_cell(table_field: str) -> str:
    """The second cell (the type) of the row of ``table_field`` in a fields table (`\\|` stays in its cell)."""
    found = re.search(rf"^\| `{table_field}` \| (.*)$", _doc(), flags=re.MULTILINE)
    assert found, f"docs/notifications.md: no row for `{table_field}`"
    return re.split(r"(?<!\\)\|", found.group(1))[0]


def test_the_scan_finds_the_phases_the_code_sends() -> None:
    phases, unresolved = _phases_sent()
    assert unresolved == [], "notify() calls whose phase the scan cannot tell (use a literal or a rule's notification)"
    assert {"started", "held", "completed", "failed", "stopped"} <= phases  # the scan sees the code


def test_every_phase_the_code_sends_is_documented_with_its_fields_and_an_example() -> None:
    phases, _ = _phases_sent()
    listed = set(re.findall(r"`([\w-]+)`", _type_cell("phase")))
    assert listed == phases, "the `phase` row lists other phases than the code sends"
    documented = _documented_fields()
    assert set(documented) == {"every"} | phases, "a `<!-- fields: ... -->` table per phase"
    assert set(_examples()) == phases, "an example per phase"


def test_the_documented_fields_are_the_fields_the_code_adds() -> None:
    documented = _documented_fields()
    assert documented["every"] == _common_fields()
    assert documented["started"] == set(deadline_fields(None))
    held = Held(0.0, 1.0, [], [], ["pdb"], "stop", 2.0, approval_id="id")
    assert documented["held"] == set(held.fields()) | {"held"}  # workflow/held.py adds the pods' reasons as `held`
    for phase in FINAL:
        assert documented[phase] == {"duration_seconds", *InstanceOutcome.REPORTED}, phase


def test_each_example_carries_the_common_fields_and_only_its_phase_s() -> None:
    documented = _documented_fields()
    for phase, example in _examples().items():
        assert example["phase"] == phase
        assert documented["every"] <= set(example), phase
        assert set(example) <= documented["every"] | documented[phase], phase


def test_the_results_of_each_final_phase_are_outcome_rules() -> None:
    cell = _type_cell("result")
    said = {phase: set(re.findall(r"`([\w-]+)`", names)) for names, phase in re.findall(r"([^;]+?) \((\w+)\)", cell)}
    expected = {phase: {r.value for r, rule in RULES.items() if rule.notification == phase} for phase in FINAL}
    assert said == expected


def test_every_hold_reason_is_documented() -> None:
    reasons = set(re.findall(r"`([\w-]+)`", _type_cell("reasons")))
    assert reasons == {r.value for r in HoldReason} | {h.value for h in Hold} | {"gate"}
    assert all(f"`{r.value}`" in _doc() for r in (*HoldReason, *Hold))

"""Which `reason` values the code gives the `Errors` metric, found by reading the source (AST), not by running it.

Three shapes are resolved:
- a literal: ``metric("Errors", reason="settings")``;
- a module-level string constant of the same file: ``REASON = "quota"`` … ``metric("Errors", reason=REASON)``;
- an f-string over a parameter of an enclosing function: ``metric("Errors", reason=f"{step}-failed")`` inside
  ``def _errors_counted(step)``; the values are the literal arguments of every call of that function anywhere in
  the scanned tree (``@_errors_counted("locate")`` → ``locate-failed``), or, when a call passes on a parameter of
  its own enclosing function (``fault_of(step, exc)`` inside ``def faults_as(step, ...)``), the literal arguments
  of that function's calls (``@faults_as("decide", ...)`` → ``decide-failed``).
Anything else (a variable, a call) is returned as unresolved, so a test can fail on it instead of missing it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

METRIC_FUNCTIONS = ("metric",)


@dataclass
class Scan:
    reasons: set[str] = field(default_factory=set)
    unresolved: list[str] = field(default_factory=list)  # "<file>:<line>: <expression>"


@dataclass(frozen=True)
class _Template:
    """An f-string reason inside function `owner` whose placeholders are `owner`'s parameters."""

    where: str
    owner: str
    params: tuple[str, ...]  # owner's positional parameters, in order
    node: ast.JoinedStr


def _is_errors_metric(call: ast.Call) -> bool:
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)
    return (
        name in METRIC_FUNCTIONS
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
        and call.args[0].value == "Errors"
    )


def _walk_with_functions(tree: ast.AST) -> Iterable[tuple[ast.AST, list[ast.FunctionDef | ast.AsyncFunctionDef]]]:
    stack: list[tuple[ast.AST, list[ast.FunctionDef | ast.AsyncFunctionDef]]] = [(tree, [])]
    while stack:
        node, functions = stack.pop()
        yield node, functions
        inner = [*functions, node] if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else functions
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _placeholders(node: ast.JoinedStr) -> list[str]:
    return [v.value.id for v in node.values if isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)]


def scan(root: Path) -> Scan:
    result = Scan()
    templates: list[_Template] = []
    calls: dict[str, list[_Call]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        constants = _module_constants(tree)
        for node, functions in _walk_with_functions(tree):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name):
                calls.setdefault(node.func.id, []).append(_Call(node, tuple(functions)))
            if not _is_errors_metric(node):
                continue
            where = f"{path.relative_to(root)}:{node.lineno}"
            reason = next((k.value for k in node.keywords if k.arg == "reason"), None)
            if reason is None:
                result.unresolved.append(f"{where}: Errors without a reason")
            elif isinstance(reason, ast.Constant) and isinstance(reason.value, str):
                result.reasons.add(reason.value)
            elif isinstance(reason, ast.Name) and reason.id in constants:
                result.reasons.add(constants[reason.id])
            elif isinstance(reason, ast.JoinedStr) and _placeholders(reason):
                names = set(_placeholders(reason))
                owner = next(
                    (f for f in reversed(functions) if names <= {a.arg for a in f.args.args}),
                    None,
                )
                if owner is None:
                    result.unresolved.append(f"{where}: {ast.unparse(reason)}")
                else:
                    params = tuple(a.arg for a in owner.args.args)
                    templates.append(_Template(where, owner.name, params, reason))
            else:
                result.unresolved.append(f"{where}: {ast.unparse(reason)}")
    for template in templates:
        found = False
        for call in calls.get(template.owner, []):
            bound: dict[str, ast.expr] = dict(zip(template.params, call.node.args, strict=False))
            bound.update({k.arg: k.value for k in call.node.keywords if k.arg})
            names = _placeholders(template.node)
            if len(set(names)) != 1:  # several placeholders: each must be a literal at the call
                values: dict[str, str] = {}
                for name in names:
                    arg = bound.get(name)
                    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                        result.unresolved.append(
                            f"{template.where}: {template.owner}(...) called with {name} not literal"
                        )
                        break
                    values[name] = arg.value
                else:
                    result.reasons.add(_render(template.node, values))
                    found = True
                continue
            literals = _literals(bound.get(names[0]), call, calls, depth=2)
            if literals is None:
                result.unresolved.append(f"{template.where}: {template.owner}(...) called with {names[0]} not literal")
                continue
            result.reasons.update(_render(template.node, {names[0]: v}) for v in literals)
            found = found or bool(literals)
        if not found:
            result.unresolved.append(f"{template.where}: no literal call of {template.owner}")
    return result


@dataclass(frozen=True)
class _Call:
    node: ast.Call
    functions: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]  # the functions it is written in, outermost first


def _literals(arg: ast.expr | None, call: _Call, calls: dict[str, list[_Call]], depth: int) -> list[str] | None:
    """The strings ``arg`` can be at ``call``: a literal, or a parameter of the function the call is written in,
    followed to that function's own calls (``depth`` levels); None when some value is not a literal."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if not isinstance(arg, ast.Name) or depth == 0:
        return None
    owner = next((f for f in reversed(call.functions) if arg.id in {a.arg for a in f.args.args}), None)
    if owner is None:
        return None
    params = [a.arg for a in owner.args.args]
    out: list[str] = []
    for outer in calls.get(owner.name, []):
        bound: dict[str, ast.expr] = dict(zip(params, outer.node.args, strict=False))
        bound.update({k.arg: k.value for k in outer.node.keywords if k.arg})
        values = _literals(bound.get(arg.id), outer, calls, depth - 1)
        if values is None:
            return None
        out.extend(values)
    return out


def _module_constants(tree: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            targets, value = [stmt.target], stmt.value
        else:
            continue
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                found[target.id] = value.value
    return found


def _render(node: ast.JoinedStr, values: dict[str, str]) -> str:
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
            out.append(values[part.value.id])
    return "".join(out)

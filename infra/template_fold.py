"""Turn templates the construct synthesized into one CloudFormation template with parameters (release_template.py).

Pure JSON work, no CDK. Two ways a parameter enters the template:

- **substitution**: the construct was synthesized with a sentinel value (a cluster name no one uses, a memory size no
  one picks); every occurrence becomes a reference: a whole value ``{"Ref": P}``, part of a string ``Fn::Sub``. Where
  it sits in a JSON key (an IAM condition key names the cluster's tag), CloudFormation allows no intrinsic function,
  so that whole property (an IAM policy document, which CloudFormation also takes as a JSON string) becomes an
  ``Fn::Sub`` string. Only a value written as it is can be found: one derived from it (a timeout in milliseconds, a
  name in upper case) stays what the sentinel made of it, so ``check_same`` compares with a synth of other sentinels.
- **variants**: the construct synthesized once per other value of a choice (an action ``ignore`` has no rule, a log
  level writes other values); what differs from the base template is folded in: a resource only some values have gets
  a ``Condition``, a value that differs becomes ``Fn::If`` on the parameter's conditions, a key only some values have
  ``Fn::If`` with ``AWS::NoValue``.

Anything else (two parameters changing the same value, a change of a resource's type) raises FoldError: the
template would otherwise say something the construct does not. tests/infra/test_template_equals_stack.py resolves
the template for assignments of the parameters and compares it with the CDK app synthesized with the same settings.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

NO_VALUE = {"Ref": "AWS::NoValue"}
_INTRINSIC = re.compile(r"^(Ref|Fn::[A-Za-z]+|Condition)$")
# properties CloudFormation also accepts as a JSON string, where an intrinsic function can build a key
STRING_JSON_PROPERTIES = {("AWS::IAM::Policy", "PolicyDocument"), ("AWS::IAM::Role", "AssumeRolePolicyDocument")}


class FoldError(ValueError):
    pass


@dataclass
class Variant:
    """The template synthesized with ``parameter`` = ``value`` (everything else as in the base)."""

    parameter: str
    value: str
    template: dict[str, Any]


@dataclass
class Folded:
    template: dict[str, Any]
    conditions: dict[str, Any] = field(default_factory=dict)


def is_intrinsic(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and bool(_INTRINSIC.match(next(iter(value))))


# --- substitution --------------------------------------------------------------------------------------------


def substitute(template: dict[str, Any], sentinels: Mapping[str, str | int]) -> dict[str, Any]:
    """Every sentinel (parameter name -> value) replaced by a reference to its parameter; logical ids and construct
    paths that contain a sentinel (construct ids named after a cluster) name the parameter instead."""
    out = copy.deepcopy(template)
    strings = {v: name for name, v in sentinels.items() if isinstance(v, str)}
    numbers = {v: name for name, v in sentinels.items() if isinstance(v, int)}
    replace_refs(out, _rename_ids(out, strings))  # first: a reference is a logical id, not a value
    for section in ("Resources", "Outputs"):
        for logical_id, body in out.get(section, {}).items():
            if section == "Resources":
                path = _path(body)
                if path is not None:  # the same whatever the sentinels: how check_same pairs resources
                    body["Metadata"]["aws:cdk:path"] = _named(path, strings)
                for prop, value in list(body.get("Properties", {}).items()):
                    if (body["Type"], prop) in STRING_JSON_PROPERTIES and _key_has(value, strings):
                        body["Properties"][prop] = _as_sub_string(value, strings, numbers, f"{logical_id}.{prop}")
                    else:
                        body["Properties"][prop] = _sub(value, strings, numbers, f"{logical_id}.{prop}")
            else:
                out[section][logical_id] = _sub(body, strings, numbers, logical_id)
    return out


def _rename_ids(template: dict[str, Any], sentinels: Mapping[str, str]) -> dict[str, str]:
    """A sentinel in a logical id (a construct named after the cluster or the e-mail address) becomes its
    parameter's name: the id stays the same whatever the value, and still says what the resource is for (an
    e-mail subscription is not mistaken for its topic)."""
    renamed = {}
    for section in ("Resources", "Outputs"):
        entries = template.get(section, {})
        for old in list(entries):
            new = old
            for sentinel, name in sentinels.items():  # as given, and as a logical id spells it (letters and digits)
                new = new.replace(sentinel, name).replace(re.sub(r"[^A-Za-z0-9]", "", sentinel), name)
            if new != old:
                if new in entries:
                    raise FoldError(f"{old}: renamed {new} exists already")
                entries[new] = entries.pop(old)
                renamed[old] = new
    return renamed


def _named(text: str, sentinels: Mapping[str, str]) -> str:
    for sentinel, name in sentinels.items():
        text = text.replace(sentinel, "{" + name + "}")
    return text


def replace_refs(node: Any, renamed: Mapping[str, str]) -> Any:
    if not renamed:
        return node
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if key == "Ref" and value in renamed:
                node[key] = renamed[value]
            elif key == "Fn::GetAtt" and isinstance(value, list) and value[0] in renamed:
                node[key] = [renamed[value[0]], *value[1:]]
            elif key == "DependsOn":
                deps = value if isinstance(value, list) else [value]
                node[key] = [renamed.get(d, d) for d in deps]
            else:
                replace_refs(value, renamed)
    elif isinstance(node, list):
        for item in node:
            replace_refs(item, renamed)
    return node


def _key_has(node: Any, strings: Mapping[str, str]) -> bool:
    if isinstance(node, dict):
        return any(any(s in k for s in strings) or _key_has(v, strings) for k, v in node.items())
    if isinstance(node, list):
        return any(_key_has(item, strings) for item in node)
    return False


def _sub(node: Any, strings: Mapping[str, str], numbers: Mapping[int, str], where: str) -> Any:
    if isinstance(node, dict):
        for key in node:
            if any(s in key for s in strings):
                raise FoldError(f"{where}: a parameter in the key {key!r}, where CloudFormation takes none")
        if "Fn::Sub" in node and _has(node, strings):
            raise FoldError(f"{where}: a parameter inside an Fn::Sub the construct wrote")
        return {k: _sub(v, strings, numbers, where) for k, v in node.items()}
    if isinstance(node, list):
        return [_sub(item, strings, numbers, where) for item in node]
    if isinstance(node, bool):
        return node
    if isinstance(node, int) and node in numbers:
        return {"Ref": numbers[node]}
    if isinstance(node, str):
        if node in strings:
            return {"Ref": strings[node]}
        if isinstance(node, str) and any(s in node for s in strings):
            text = node.replace("${", "${!")
            for sentinel, name in strings.items():
                text = text.replace(sentinel, "${" + name + "}")
            return {"Fn::Sub": text}
        if node.isdigit() and int(node) in numbers:  # CDK writes some numbers as strings
            return {"Ref": numbers[int(node)]}
    return node


def _has(node: Any, strings: Mapping[str, str]) -> bool:
    return any(s in json.dumps(node) for s in strings)


def _as_sub_string(value: Any, strings: Mapping[str, str], numbers: Mapping[int, str], where: str) -> dict[str, Any]:
    """``value`` as JSON text in an ``Fn::Sub``: sentinels become ``${Parameter}``, every intrinsic function a
    variable of the substitution (its value must be a string: ARNs are)."""
    variables: dict[str, Any] = {}

    def lift(node: Any) -> Any:
        if is_intrinsic(node):
            name = f"V{len(variables)}"
            variables[name] = _sub(node, strings, numbers, where)
            return "\x00" + name + "\x00"
        if isinstance(node, dict):
            return {lift_text(k): lift(v) for k, v in node.items()}
        if isinstance(node, list):
            return [lift(item) for item in node]
        return lift_text(node) if isinstance(node, str) else node

    def lift_text(text: str) -> str:
        text = text.replace("${", "${!")
        for sentinel, name in strings.items():
            text = text.replace(sentinel, "\x00" + name + "\x00")
        return text

    body = json.dumps(lift(value), separators=(",", ":"), sort_keys=True)
    body = re.sub(r"\\u0000([A-Za-z0-9]+)\\u0000", r"${\1}", body)
    return {"Fn::Sub": [body, variables]} if variables else {"Fn::Sub": body}


def check_same(base: dict[str, Any], other: dict[str, Any]) -> None:
    """``other``: the same construct synthesized with other sentinels, substituted as ``base`` was. Whatever differs
    was derived from a parameter's value rather than written as it is (a timeout in milliseconds, a name in upper
    case, a hash of it): a reference cannot express that, and the template would hold what the sentinel made of it
    instead of what the value makes of it."""
    other = copy.deepcopy(other)
    _align_ids(base, other)
    found = [
        f"{section}.{where}"
        for section in ("Resources", "Outputs")
        for where in _differences(_without_metadata(base.get(section, {})), _without_metadata(other.get(section, {})))
    ]
    if found:
        raise FoldError(f"derived from a parameter's value, not the value itself (synthesized twice): {found[:5]}")


def _without_metadata(entries: Mapping[str, Any]) -> dict[str, Any]:
    return {k: {p: v for p, v in body.items() if p != "Metadata"} for k, body in entries.items()}


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    if a == b:
        return []
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        return [d for k in a for d in _differences(a[k], b[k], f"{where}.{k}" if where else str(k))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{where}[{i}]")]
    return [where]


# --- variants ------------------------------------------------------------------------------------------------


def fold(base: dict[str, Any], variants: list[Variant], condition_of: Mapping[tuple[str, str], str]) -> Folded:
    """Fold each variant's differences from ``base`` into it. ``condition_of[(parameter, value)]`` names the
    condition "parameter = value" (release_template.py declares them)."""
    out = copy.deepcopy(base)
    touched: dict[str, str] = {}  # path -> parameter that changed it
    resource_conditions: dict[str, dict[str, list[str]]] = {}  # logical id -> parameter -> values it exists for
    all_values: dict[str, list[str]] = {}
    for variant in variants:
        all_values.setdefault(variant.parameter, []).append(variant.value)
    for variant in variants:
        _align_ids(base, variant.template)
    for section in ("Resources", "Outputs"):
        base_entries = base.get(section, {})
        for variant in variants:
            other = variant.template.get(section, {})
            for logical_id in set(base_entries) | set(other):
                where = f"{section}.{logical_id}"
                if logical_id not in other:
                    resource_conditions.setdefault(where, {}).setdefault(variant.parameter, [])
                    continue
                if logical_id not in base_entries:
                    raise FoldError(f"{where}: only with {variant.parameter}={variant.value}, not in the base")
                mine = out[section][logical_id]
                if section == "Resources" and mine["Type"] != other[logical_id]["Type"]:
                    raise FoldError(f"{where}: another type with {variant.parameter}={variant.value}")
                if mine.get("DependsOn") != other[logical_id].get("DependsOn"):
                    raise FoldError(f"{where}: DependsOn changes with {variant.parameter}")
                _merge(out[section], logical_id, base_entries[logical_id], other[logical_id], variant, condition_of,
                       touched, where)  # fmt: skip
                resource_conditions.setdefault(where, {}).setdefault(variant.parameter, []).append(variant.value)
    conditions: dict[str, Any] = {}
    for where, present in resource_conditions.items():
        section, logical_id = where.split(".", 1)
        needed = []
        for parameter, values in sorted(present.items()):
            missing = [v for v in all_values[parameter] if v not in values]
            if missing:  # absent for these values: exists unless the parameter is one of them
                needed.append(_none_of(parameter, missing, condition_of, conditions))
        if needed:
            name = needed[0] if len(needed) == 1 else _and(needed, conditions)
            out[section][logical_id]["Condition"] = name
    return Folded(out, conditions)


def _align_ids(base: dict[str, Any], other: dict[str, Any]) -> None:
    """Give the variant's resources the base's logical ids where they are the same construct (its path): CDK names a
    function version after a hash of the function's configuration, which a variant changes."""
    paths = {_path(r): k for k, r in base.get("Resources", {}).items() if _path(r)}
    renamed = {
        k: paths[_path(r)] for k, r in other.get("Resources", {}).items() if _path(r) in paths and paths[_path(r)] != k
    }
    for old, new in renamed.items():
        other["Resources"][new] = other["Resources"].pop(old)
    replace_refs(other, renamed)


def _path(resource: Mapping[str, Any]) -> str | None:
    path = (resource.get("Metadata") or {}).get("aws:cdk:path")
    return str(path) if path else None


def _none_of(
    parameter: str, values: list[str], condition_of: Mapping[tuple[str, str], str], conds: dict[str, Any]
) -> str:
    name = f"{parameter}Not" + "Or".join(v.capitalize() or "Empty" for v in values)
    equals = [{"Condition": condition_of[(parameter, v)]} for v in values]
    conds[name] = {"Fn::Not": [equals[0] if len(equals) == 1 else {"Fn::Or": equals}]}
    return name


def _and(names: list[str], conds: dict[str, Any]) -> str:
    name = "And".join(names)
    conds[name] = {"Fn::And": [{"Condition": n} for n in names]}
    return name


def _merge(
    parent: dict[str, Any],
    key: str,
    base: Any,
    other: Any,
    variant: Variant,
    condition_of: Mapping[tuple[str, str], str],
    touched: dict[str, str],
    where: str,
) -> None:
    """Fold ``other`` (the variant's value at parent[key]) into parent[key] (the base's, maybe folded already)."""
    if base == other:
        return
    if isinstance(base, dict) and isinstance(other, dict) and not is_intrinsic(base) and not is_intrinsic(other):
        for k in set(base) | set(other):
            here = f"{where}.{k}"
            if k not in other:
                _fold_value(parent[key], k, parent[key][k], NO_VALUE, variant, condition_of, touched, here)
            elif k not in base:
                parent[key].setdefault(k, NO_VALUE)
                _fold_value(parent[key], k, parent[key][k], other[k], variant, condition_of, touched, here)
            else:
                _merge(parent[key], k, base[k], other[k], variant, condition_of, touched, here)
        return
    if isinstance(base, list) and isinstance(other, list) and len(base) == len(other):
        for i in range(len(base)):
            _merge(parent[key], i, base[i], other[i], variant, condition_of, touched, f"{where}[{i}]")  # type: ignore[arg-type]
        return
    kept = _subsequence(base, other) if isinstance(base, list) and isinstance(other, list) else None
    if kept is not None:  # items the variant lacks (a rule's statement): each one absent under its condition
        for i in range(len(base)):
            if i not in kept:
                _fold_value(parent[key], i, parent[key][i], NO_VALUE, variant, condition_of, touched, f"{where}[{i}]")
        return
    _fold_value(parent, key, parent[key], other, variant, condition_of, touched, where)


def _subsequence(base: list[Any], other: list[Any]) -> set[int] | None:
    """The indexes of ``base`` whose items are ``other``'s, in order, if ``other`` is ``base`` less some items."""
    kept, j = set(), 0
    for i, item in enumerate(base):
        if j < len(other) and item == other[j]:
            kept.add(i)
            j += 1
    return kept if j == len(other) else None


def _fold_value(
    parent: Any,
    key: Any,
    current: Any,
    other: Any,
    variant: Variant,
    condition_of: Mapping[tuple[str, str], str],
    touched: dict[str, str],
    where: str,
) -> None:
    owner = touched.setdefault(where, variant.parameter)
    if owner != variant.parameter:
        raise FoldError(f"{where}: changed by both {owner} and {variant.parameter}")
    parent[key] = {"Fn::If": [condition_of[(variant.parameter, variant.value)], other, current]}

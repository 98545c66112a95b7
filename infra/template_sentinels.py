"""Parameters into a template the construct synthesized, by sentinel values (release_template.py; template_fold.py folds
the choices in).

Pure JSON work, no CDK. The construct is synthesized with a sentinel value for each free parameter (a cluster name no
one uses, a memory size no one picks); every occurrence becomes a reference: a whole value ``{"Ref": P}``, part of a
string ``Fn::Sub``. Where it sits in a JSON key (an IAM condition key names the cluster's tag), CloudFormation allows
no intrinsic function, so that whole property (an IAM policy document, which CloudFormation also takes as a JSON
string) becomes an ``Fn::Sub`` string.

Only a value written as it is can be found: one derived from it stays what the sentinel made of it, and the template
would hold that instead of what the value makes of it. Two checks refuse such a template (FoldError):

- ``check_whole``: no part of a sentinel is left after substitution. A string sentinel is made of distinctive runs
  (``zzownerzz/zzkeyzz``) joined by the characters a value of its parameter may contain and code may split on, so a
  value cut from it (split, partitioned, truncated, re-cased) leaves a run behind.
- ``check_same``: a synth with other sentinels substitutes to the same template; this catches what leaves no run (a
  timeout in milliseconds, a hash of the name).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

_INTRINSIC = re.compile(r"^(Ref|Fn::[A-Za-z]+|Condition)$")
# properties CloudFormation also accepts as a JSON string, where an intrinsic function can build a key
STRING_JSON_PROPERTIES = {("AWS::IAM::Policy", "PolicyDocument"), ("AWS::IAM::Role", "AssumeRolePolicyDocument")}
SECTIONS = ("Resources", "Outputs")


class FoldError(ValueError):
    """The template would say something the construct does not (a derived value, two parameters changing one value
    with no synth of them together, a resource changing its type)."""


def is_intrinsic(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and bool(_INTRINSIC.match(next(iter(value))))


def substitute(template: dict[str, Any], sentinels: Mapping[str, str | int]) -> dict[str, Any]:
    """Every sentinel (parameter name -> value) replaced by a reference to its parameter; logical ids and construct
    paths that contain a sentinel (construct ids named after a cluster) name the parameter instead."""
    out = copy.deepcopy(template)
    strings = {v: name for name, v in sentinels.items() if isinstance(v, str)}
    numbers = {v: name for name, v in sentinels.items() if isinstance(v, int)}
    replace_refs(out, _rename_ids(out, strings))  # first: a reference is a logical id, not a value
    for section in SECTIONS:
        for logical_id, body in out.get(section, {}).items():
            if section == "Resources":
                path = path_of(body)
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
    for section in SECTIONS:
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
    for sentinel, name in sentinels.items():  # as given, and as a construct id spells it (CDK writes "/" as "--")
        text = text.replace(sentinel, "{" + name + "}").replace(sentinel.replace("/", "--"), "{" + name + "}")
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
    variable of the substitution (its value must be a string: ARNs are). CloudFormation puts a parameter's value in
    the text as it is: release_template.py's patterns keep quotes and backslashes out of such parameters."""
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


# --- the derived-value checks --------------------------------------------------------------------------------


def sentinel_runs(sentinel: str) -> list[str]:
    """The runs of letters and digits a string sentinel is made of (what ``check_whole`` looks for)."""
    return re.findall(r"[A-Za-z0-9]+", sentinel)


def check_whole(template: dict[str, Any], sentinels: Mapping[str, str | int]) -> None:
    """``template``: substituted with ``sentinels``. A run of a string sentinel still there (in a logical id, a key or
    a string, in any case) is part of a value derived from the parameter by a string operation (the value split at
    a character, cut short, upper-cased) rather than written as it is: a reference cannot express it."""
    runs: dict[str, list[str]] = {}
    for name, sentinel in sentinels.items():
        for run in sentinel_runs(sentinel) if isinstance(sentinel, str) else []:
            runs.setdefault(run.lower(), []).append(name)
    found = [
        f"{where} ({run!r} of {'/'.join(names)})"
        for where, text in _texts(_without_metadata(template))
        for run, names in runs.items()
        if run in text.lower()
    ]
    if found:
        raise FoldError(f"part of a sentinel left, a value derived from a parameter's: {found[:5]}")


def _texts(node: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every key and string in ``node`` with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}.{key}" if where else str(key)
            yield here, str(key)
            yield from _texts(value, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _texts(item, f"{where}[{i}]")
    elif isinstance(node, str):
        yield where, node


def check_same(base: dict[str, Any], other: dict[str, Any]) -> None:
    """``other``: the same construct synthesized with other sentinels, substituted as ``base`` was. Whatever differs
    was derived from a parameter's value rather than written as it is (a timeout in milliseconds, a name in upper
    case, a hash of it): a reference cannot express that, and the template would hold what the sentinel made of it
    instead of what the value makes of it."""
    other = copy.deepcopy(other)
    align_ids(base, other)
    found = [
        f"{section}.{where}"
        for section in SECTIONS
        for where in _differences(_without_metadata(base).get(section, {}), _without_metadata(other).get(section, {}))
    ]
    if found:
        raise FoldError(f"derived from a parameter's value, not the value itself (synthesized twice): {found[:5]}")


def _without_metadata(template: Mapping[str, Any]) -> dict[str, Any]:
    def bare(body: Mapping[str, Any]) -> dict[str, Any]:
        return {p: v for p, v in body.items() if p != "Metadata"}

    return {section: {k: bare(body) for k, body in template.get(section, {}).items()} for section in SECTIONS}


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    if a == b:
        return []
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        return [d for k in a for d in _differences(a[k], b[k], f"{where}.{k}" if where else str(k))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{where}[{i}]")]
    return [where]


def align_ids(base: dict[str, Any], other: dict[str, Any]) -> None:
    """Give ``other``'s resources the base's logical ids where they are the same construct (its path): CDK names a
    function version after a hash of the function's configuration, which another value changes."""
    paths = {path_of(r): k for k, r in base.get("Resources", {}).items() if path_of(r)}
    renamed = {
        k: paths[path_of(r)]
        for k, r in other.get("Resources", {}).items()
        if path_of(r) in paths and paths[path_of(r)] != k
    }
    for old, new in renamed.items():
        other["Resources"][new] = other["Resources"].pop(old)
    replace_refs(other, renamed)


def path_of(resource: Mapping[str, Any]) -> str | None:
    path = (resource.get("Metadata") or {}).get("aws:cdk:path")
    return str(path) if path else None

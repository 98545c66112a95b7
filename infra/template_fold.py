"""Fold templates the construct synthesized for other values of a choice into one CloudFormation template
(release_template.py; template_sentinels.py has put the free parameters in as references first).

Pure JSON work, no CDK. The construct is synthesized once per other value of a choice (an action ``cordon`` writes
another value, a log level other settings, an empty e-mail address no subscription); what differs from the base
template is folded in: a resource only some values have gets a ``Condition``, a value that differs becomes ``Fn::If``
on the parameter's conditions, a key only some values have ``Fn::If`` with ``AWS::NoValue``.

A value two parameters change (the ownership tag's key and value both change the one IAM policy document) depends on
them together, which folding one at a time cannot know: a synth of them together (a variant with ``together``) says
it. Such a combination is folded last, as an ``Fn::If`` on all its conditions around what the template says without
it, wherever that differs from the synth; a value it wraps must depend on no other parameter. Where two parameters
change one value with no synth of them together, or a resource changes its type, FoldError: the template would
otherwise say something the construct does not. tests/infra/test_template_equals_stack.py resolves the template for
assignments of the parameters and compares it with the CDK app synthesized with the same settings.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .template_sentinels import SECTIONS, FoldError, align_ids, is_intrinsic

NO_VALUE = {"Ref": "AWS::NoValue"}
_DROP = object()  # what AWS::NoValue leaves: no key, no list item


@dataclass
class Variant:
    """The template synthesized with ``parameter`` = ``value`` and, for a combination, the ``together`` parameters at
    their values (everything else as in the base)."""

    parameter: str
    value: str
    template: dict[str, Any]
    together: Mapping[str, str] = field(default_factory=dict)

    @property
    def assignment(self) -> dict[str, str]:
        return {self.parameter: self.value, **self.together}


@dataclass
class Folded:
    template: dict[str, Any]
    conditions: dict[str, Any] = field(default_factory=dict)


def fold(base: dict[str, Any], variants: list[Variant], condition_of: Mapping[tuple[str, str], str]) -> Folded:
    """Fold each variant's differences from ``base`` into it, combinations last. ``condition_of[(parameter,
    value)]`` names the condition "parameter = value" (release_template.py declares them)."""
    for variant in variants:
        align_ids(base, variant.template)
    folder = _Folder(base, [v for v in variants if not v.together], [v for v in variants if v.together], condition_of)
    folder.fold_singles()
    for combination in folder.combinations:
        folder.fold_combination(combination)
    return Folded(folder.out, folder.conditions)


class _Folder:
    def __init__(
        self,
        base: dict[str, Any],
        singles: list[Variant],
        combinations: list[Variant],
        condition_of: Mapping[tuple[str, str], str],
    ) -> None:
        self.base, self.singles, self.combinations, self.condition_of = base, singles, combinations, condition_of
        self.out = copy.deepcopy(base)
        self.conditions: dict[str, Any] = {}
        # what each condition the fold writes in an Fn::If means: these (parameter, value) pairs all hold
        self.meaning = {name: frozenset([pair]) for pair, name in condition_of.items()}
        self.values: dict[str, list[str]] = {}  # parameter -> its variants' values
        for variant in singles:
            self.values.setdefault(variant.parameter, []).append(variant.value)
        self.touched: dict[str, set[str]] = {}  # path -> the parameters that changed it

    # --- one parameter at a time ---

    def fold_singles(self) -> None:
        resource_conditions: dict[str, dict[str, list[str]]] = {}  # logical id -> parameter -> values it exists for
        for section in SECTIONS:
            base_entries = self.base.get(section, {})
            for variant in self.singles:
                other = variant.template.get(section, {})
                for logical_id in set(base_entries) | set(other):
                    where = f"{section}.{logical_id}"
                    if logical_id not in other:
                        resource_conditions.setdefault(where, {}).setdefault(variant.parameter, [])
                        continue
                    if logical_id not in base_entries:
                        raise FoldError(f"{where}: only with {variant.parameter}={variant.value}, not in the base")
                    mine = self.out[section][logical_id]
                    if section == "Resources" and mine["Type"] != other[logical_id]["Type"]:
                        raise FoldError(f"{where}: another type with {variant.parameter}={variant.value}")
                    if mine.get("DependsOn") != other[logical_id].get("DependsOn"):
                        raise FoldError(f"{where}: DependsOn changes with {variant.parameter}")
                    self._merge(self.out[section], logical_id, base_entries[logical_id], other[logical_id], variant,
                                where)  # fmt: skip
                    resource_conditions.setdefault(where, {}).setdefault(variant.parameter, []).append(variant.value)
        for where, present in resource_conditions.items():
            section, logical_id = where.split(".", 1)
            needed = []
            for parameter, values in sorted(present.items()):
                missing = [v for v in self.values[parameter] if v not in values]
                if missing:  # absent for these values: exists unless the parameter is one of them
                    needed.append(self._none_of(parameter, missing))
            if needed:
                self.out[section][logical_id]["Condition"] = needed[0] if len(needed) == 1 else self._and(needed)

    def _merge(self, parent: Any, key: Any, base: Any, other: Any, variant: Variant, where: str) -> None:
        """Fold ``other`` (the variant's value at parent[key]) into parent[key] (the base's, maybe folded already)."""
        if base == other:
            return
        if isinstance(base, dict) and isinstance(other, dict) and not is_intrinsic(base) and not is_intrinsic(other):
            for k in set(base) | set(other):
                here = f"{where}.{k}"
                if k not in other:
                    self._fold_value(parent[key], k, NO_VALUE, variant, here)
                elif k not in base:
                    parent[key].setdefault(k, NO_VALUE)
                    self._fold_value(parent[key], k, other[k], variant, here)
                else:
                    self._merge(parent[key], k, base[k], other[k], variant, here)
            return
        if isinstance(base, list) and isinstance(other, list) and len(base) == len(other):
            for i in range(len(base)):
                self._merge(parent[key], i, base[i], other[i], variant, f"{where}[{i}]")
            return
        kept = _subsequence(base, other) if isinstance(base, list) and isinstance(other, list) else None
        if kept is not None:  # items the variant lacks (a rule's statement): each one absent under its condition
            for i in range(len(base)):
                if i not in kept:
                    self._fold_value(parent[key], i, NO_VALUE, variant, f"{where}[{i}]")
            return
        self._fold_value(parent, key, other, variant, where)

    def _fold_value(self, parent: Any, key: Any, other: Any, variant: Variant, where: str) -> None:
        owners = self.touched.setdefault(where, set())
        owners.add(variant.parameter)
        if len(owners) > 1 and not self._synthesized_together(owners):
            first = sorted(owners - {variant.parameter})[0]
            raise FoldError(f"{where}: changed by both {first} and {variant.parameter}, never synthesized together")
        parent[key] = {"Fn::If": [self.condition_of[(variant.parameter, variant.value)], other, parent[key]]}

    def _synthesized_together(self, parameters: set[str]) -> bool:
        """Whether a combination was synthesized for every choice of these parameters' variant values."""
        assignments = [frozenset(c.assignment.items()) for c in self.combinations]
        return all(
            any(frozenset(zip(sorted(parameters), values, strict=True)) <= done for done in assignments)
            for values in itertools.product(*(self.values[p] for p in sorted(parameters)))
        )

    def _none_of(self, parameter: str, values: list[str]) -> str:
        name = f"{parameter}Not" + "Or".join(v.capitalize() or "Empty" for v in values)
        equals = [{"Condition": self.condition_of[(parameter, v)]} for v in values]
        self.conditions[name] = {"Fn::Not": [equals[0] if len(equals) == 1 else {"Fn::Or": equals}]}
        return name

    def _and(self, names: list[str]) -> str:
        name = "And".join(names)
        self.conditions[name] = {"Fn::And": [{"Condition": n} for n in names]}
        return name

    # --- several parameters together ---

    def fold_combination(self, combination: Variant) -> None:
        together = frozenset(combination.assignment.items())
        missing = [f"{p}={v}" for p, v in sorted(together) if (p, v) not in self.condition_of]
        if missing:
            raise FoldError(f"a combination with {missing}: no condition for them")
        name = self._and([self.condition_of[pair] for pair in sorted(together)])
        self.meaning[name] = together
        for section in SECTIONS:
            entries = self.out.get(section, {})
            present = {k for k, body in entries.items() if self._holds(body.get("Condition"), together)}
            other = combination.template.get(section, {})
            if set(other) != present:
                raise FoldError(
                    f"{section} {sorted(set(other) ^ present)}: present or not by {sorted(dict(together))} together,"
                    " beyond what each of them does"
                )
            for logical_id in sorted(present):
                body = {k: v for k, v in entries[logical_id].items() if k != "Condition"}
                self._combine(entries, logical_id, body, other[logical_id], together, name, f"{section}.{logical_id}")

    def _combine(
        self, parent: Any, key: Any, node: Any, other: Any, together: frozenset[tuple[str, str]], name: str, where: str
    ) -> None:
        """``node`` (parent[key], folded; of a resource, its body without its condition) is what the template says
        under ``together``, seen through the fold's ``Fn::If``s; ``other`` is what the synth of them says."""
        if self._seen(node, together) == other:
            return
        if isinstance(node, dict) and isinstance(other, dict) and not is_intrinsic(node) and not is_intrinsic(other):
            target = parent[key]
            for k in sorted(set(node) | set(other)):
                here = f"{where}.{k}"
                if k not in other:
                    if self._seen(node[k], together) is not _DROP:
                        self._wrap(target, k, NO_VALUE, together, name, here)
                elif k not in node:
                    target[k] = NO_VALUE
                    self._wrap(target, k, other[k], together, name, here)
                else:
                    self._combine(target, k, node[k], other[k], together, name, here)
            return
        if (
            isinstance(node, list)
            and isinstance(other, list)
            and len(node) == len(other)
            and all(self._seen(item, together) is not _DROP for item in node)
        ):
            for i, item in enumerate(node):
                self._combine(node, i, item, other[i], together, name, f"{where}[{i}]")
            return
        self._wrap(parent, key, other, together, name, where)

    def _wrap(
        self, parent: Any, key: Any, other: Any, together: frozenset[tuple[str, str]], name: str, where: str
    ) -> None:
        """parent[key] becomes ``other`` when the combination holds: exact only if nothing in it depends on another
        parameter (the synth of the combination has that one at its base value)."""
        others = {p for c in self._fold_conditions(parent[key]) for p, _ in self.meaning[c]} - {p for p, _ in together}
        if others:
            raise FoldError(f"{where}: changed by {sorted(dict(together))} together and by {sorted(others)}")
        parent[key] = {"Fn::If": [name, other, parent[key]]}

    def _fold_conditions(self, node: Any) -> set[str]:
        if isinstance(node, dict):
            found = {node["Fn::If"][0]} if set(node) == {"Fn::If"} and node["Fn::If"][0] in self.meaning else set()
            return found.union(*(self._fold_conditions(v) for v in node.values()))
        if isinstance(node, list):
            return set().union(*(self._fold_conditions(item) for item in node))
        return set()

    def _seen(self, node: Any, together: frozenset[tuple[str, str]]) -> Any:
        """``node`` with each of the fold's ``Fn::If``s decided for ``together`` (every other parameter at its base
        value); ``_DROP`` where that leaves ``AWS::NoValue``."""
        if isinstance(node, dict):
            if set(node) == {"Fn::If"} and node["Fn::If"][0] in self.meaning:
                condition, when_true, when_false = node["Fn::If"]
                chosen = when_true if self.meaning[condition] <= together else when_false
                return _DROP if chosen == NO_VALUE else self._seen(chosen, together)
            seen = {k: self._seen(v, together) for k, v in node.items()}
            return {k: v for k, v in seen.items() if v is not _DROP}
        if isinstance(node, list):
            return [v for v in (self._seen(item, together) for item in node) if v is not _DROP]
        return node

    def _holds(self, condition: str | None, together: frozenset[tuple[str, str]]) -> bool:
        """Whether a resource's condition (the fold's) holds for ``together``, every other parameter at its base."""
        if condition is None:
            return True
        if condition in self.meaning:
            return self.meaning[condition] <= together
        return self._truth(self.conditions[condition], together)

    def _truth(self, expression: Mapping[str, Any], together: frozenset[tuple[str, str]]) -> bool:
        (function, args), *_ = expression.items()
        if function == "Condition":
            return self._holds(args, together)
        truths = [self._truth(a, together) for a in args]
        if function == "Fn::Not":
            return not truths[0]
        return any(truths) if function == "Fn::Or" else all(truths)


def _subsequence(base: list[Any], other: list[Any]) -> set[int] | None:
    """The indexes of ``base`` whose items are ``other``'s, in order, if ``other`` is ``base`` less some items."""
    kept, j = set(), 0
    for i, item in enumerate(base):
        if j < len(other) and item == other[j]:
            kept.add(i)
            j += 1
    return kept if j == len(other) else None

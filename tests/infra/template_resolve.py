"""What CloudFormation makes of a template for one assignment of its parameters, as far as the template alone says:
rules checked (values they refuse raise ValueError), conditions evaluated, resources and outputs without their
condition dropped, ``Fn::If`` chosen, ``AWS::NoValue`` removed, ``Ref`` of a parameter and ``Fn::Sub`` over
parameters replaced by the values, ``Fn::Join`` of values joined. What only the deployment knows (``Fn::GetAtt``, a
resource's ``Ref``, pseudo parameters) stays as written, so the result compares with a template synthesized for
those values directly.

``Fn::Sub`` over a JSON document (infra/template_sentinels.py writes an IAM policy whose condition key names the cluster
that way) is parsed back into the document, its variables put back where they stood.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_DROP = object()  # AWS::NoValue: the key or list item is absent
_VARIABLE = re.compile(r"\$\{([^!}][^}]*)\}")


class Resolver:
    def __init__(
        self, template: Mapping[str, Any], values: Mapping[str, str | int], pseudo: Mapping[str, str] | None = None
    ) -> None:
        parameters = template.get("Parameters", {})
        missing = [p for p, body in parameters.items() if p not in values and "Default" not in body]
        if missing:
            raise ValueError(f"no value for the required parameters {missing}")
        unknown = sorted(set(values) - set(parameters))
        if unknown:
            raise ValueError(f"not parameters of the template: {unknown}")
        self.values = {p: values.get(p, body.get("Default")) for p, body in parameters.items()} | dict(pseudo or {})
        self.conditions = dict(template.get("Conditions", {}))
        self._evaluated: dict[str, bool] = {}
        for name, rule in template.get("Rules", {}).items():  # CloudFormation refuses the values before any change
            if "RuleCondition" not in rule or self._truth(rule["RuleCondition"]):
                for assertion in rule["Assertions"]:
                    if not self._truth(assertion["Assert"]):
                        raise ValueError(f"rule {name}: {assertion.get('AssertDescription', 'refused')}")

    def condition(self, name: str) -> bool:
        if name not in self._evaluated:
            self._evaluated[name] = self._truth(self.conditions[name])
        return self._evaluated[name]

    def _truth(self, node: Any) -> bool:
        (function, args), *_ = node.items()
        if function == "Condition":
            return self.condition(args)
        if function == "Fn::Equals":
            left, right = (self.value(a) for a in args)
            return str(left) == str(right)
        if function == "Fn::Not":
            return not self._truth(args[0])
        if function == "Fn::And":
            return all(self._truth(a) for a in args)
        if function == "Fn::Or":
            return any(self._truth(a) for a in args)
        raise ValueError(f"not a condition function: {function}")

    def value(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.value(item) for item in node) if v is not _DROP]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (function, args), *_ = node.items()
            if function == "Ref" and args == "AWS::NoValue":
                return _DROP
            if function == "Ref" and args in self.values:
                return self.values[args]
            if function == "Fn::If":
                name, when_true, when_false = args
                return self.value(when_true if self.condition(name) else when_false)
            if function == "Fn::Sub":
                return self._sub(args)
            if function == "Fn::Join":
                separator, items = args[0], self.value(args[1])
                if all(isinstance(item, str | int) and not isinstance(item, bool) for item in items):
                    return separator.join(str(item) for item in items)
                return {"Fn::Join": [separator, items]}
        return {k: v for k, v in ((k, self.value(v)) for k, v in node.items()) if v is not _DROP}

    def _sub(self, args: Any) -> Any:
        text, variables = (args, {}) if isinstance(args, str) else args
        if variables:  # a JSON document with its intrinsic functions lifted into variables
            inserted = _VARIABLE.sub(lambda m: _json_text(self.values.get(m.group(1)), m.group(0)), text)
            return _put_back(json.loads(inserted), {name: self.value(v) for name, v in variables.items()})
        unresolved = [n for n in _VARIABLE.findall(text) if n not in self.values]
        replaced = _VARIABLE.sub(lambda m: str(self.values.get(m.group(1), m.group(0))), text)
        if unresolved:  # only the deployment knows the rest: stays a substitution
            return {"Fn::Sub": replaced}
        return replaced.replace("${!", "${")

    def template(self, template: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for section in ("Resources", "Outputs"):
            kept = {}
            for logical_id, body in template.get(section, {}).items():
                condition = body.get("Condition")
                if condition is not None and not self.condition(condition):
                    continue
                kept[logical_id] = self.value({k: v for k, v in body.items() if k != "Condition"})
            out[section] = kept
        return out


def _json_text(value: Any, otherwise: str) -> str:
    return otherwise if value is None else json.dumps(str(value))[1:-1]


def _put_back(node: Any, variables: Mapping[str, Any]) -> Any:
    if isinstance(node, str):
        whole = _VARIABLE.fullmatch(node)
        if whole and whole.group(1) in variables:
            return variables[whole.group(1)]
        return node.replace("${!", "${")
    if isinstance(node, list):
        return [_put_back(item, variables) for item in node]
    if isinstance(node, dict):
        return {_put_back(k, {}): _put_back(v, variables) for k, v in node.items()}
    return node


def resolve(
    template: Mapping[str, Any], values: Mapping[str, str | int], pseudo: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Resources and Outputs of ``template`` as deployed with ``values`` (parameters not given: their defaults) and,
    if given, where: ``pseudo`` values such as ``AWS::Region``."""
    return Resolver(template, values, pseudo).template(template)
